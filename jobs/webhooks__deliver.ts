// One delivery attempt of one event to one webhook, signed the Standard Webhooks way, recorded in the delivery
// log, and on failure followed by the next job of the retry schedule. The dispatch row decides what may be sent:
// an acknowledged event is never sent again (but on an explicit redelivery), and a lease keeps two jobs from
// sending one dispatch at once.
import type { Task } from 'graphile-worker';
import pkg from '../package.json' with { type: 'json' };
import type { Db } from '../db/knex.ts';
import { isUuid } from '../shared/accounts.ts';
import { deliveryJob, isDeliverWebhookPayload, type DeliverWebhookPayload } from '../shared/events.ts';
import { decryptSecret, signatureHeader } from '../shared/webhook-secrets.ts';
import { urlProblem } from '../shared/webhook-urls.ts';
import type { Poster, PostResult } from './http-post.ts';
import type { OriginSlots } from './origin-slots.ts';
import type { Timestamp } from '../db/timestamps.ts';

const USER_AGENT = `Stockroom-Webhooks/${pkg.version}`;

/** Seconds to wait after each failed attempt: 15 attempts over about 3 days and 3 hours. */
export const RETRY_DELAYS_S = [5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 43200, 43200, 43200, 43200, 43200];
/** A webhook that has answered nothing but failures for this long is disabled (`failing`). */
const FAILING_TOO_LONG = "coalesce(failing_since <= now() - interval '5 days', false)";
/** The longest `Retry-After` honoured. */
const MAX_RETRY_AFTER_S = 24 * 3600;

export interface DeliverDeps {
  db: Db;
  poster: Poster;
  originSlots: OriginSlots;
  secretKey: Buffer;
  timeoutMs: number;
  allowInsecure: boolean;
  /** Overrides RETRY_DELAYS_S (in milliseconds): tests run the schedule in moments. */
  retryDelaysMs?: number[];
}

interface Target {
  url: string;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_valid: boolean;
  account_id: string;
  event_type: string;
  event_data: unknown;
  event_created_at: Timestamp;
}

/** Which dispatches this job may attempt: any, on a redelivery; else the unacknowledged one at its step. */
function dueDispatch(job: DeliverWebhookPayload): { sql: string; bindings: Array<string | number> } {
  return job.redelivery
    ? { sql: 'd.webhook_id = ?::uuid and d.event_id = ?::uuid', bindings: [job.webhookId, job.eventId] }
    : { sql: 'd.webhook_id = ?::uuid and d.event_id = ?::uuid and d.acknowledged_at is null and d.retry = ?', bindings: [job.webhookId, job.eventId, job.retry ?? 0] };
}

/**
 * Takes the dispatch's lease for this job's attempt and loads what to send, in one statement. `busy` while another
 * attempt holds the lease; `done` when there is nothing for this job to send (acknowledged, its step of the
 * schedule already taken, the webhook disabled or deleted).
 */
async function claim(db: Db, job: DeliverWebhookPayload, leaseMs: number): Promise<Target | 'busy' | 'done'> {
  const due = dueDispatch(job);
  const { rows } = await db.raw<{ rows: Target[] }>(
    `update webhook_dispatches d set leased_until = now() + make_interval(secs => ?)
     from webhooks w, events e
     where ${due.sql} and w.id = d.webhook_id and e.id = d.event_id and w.enabled
       and (d.leased_until is null or d.leased_until < now())
     returning w.url, w.secret_encrypted, w.previous_secret_encrypted, w.account_id,
       coalesce(w.previous_secret_expires_at > now(), false) as previous_secret_valid,
       e.type as event_type, e.data as event_data, e.created_at as event_created_at`,
    [leaseMs / 1000, ...due.bindings],
  );
  if (rows[0]) return rows[0];
  const { rows: leased } = await db.raw(
    `select 1 from webhook_dispatches d join webhooks w on w.id = d.webhook_id where ${due.sql} and w.enabled`, due.bindings);
  return leased.length ? 'busy' : 'done';
}

interface Outcome {
  ok: boolean;
  /** 410: the receiver says it is gone for good. */
  gone: boolean;
  retryAfterS?: number;
}

function retryAfterSeconds(value: string | string[] | undefined): number | undefined {
  const raw = Array.isArray(value) ? value[0] : value;
  if (!raw) return undefined;
  const seconds = /^\d+$/.test(raw.trim()) ? Number(raw) : (Date.parse(raw) - Date.now()) / 1000;
  return Number.isFinite(seconds) ? Math.min(MAX_RETRY_AFTER_S, Math.max(1, Math.ceil(seconds))) : undefined;
}

function judge(result: PostResult): Outcome {
  const status = result.status ?? 0;
  return {
    ok: status >= 200 && status < 300,
    gone: status === 410,
    retryAfterS: status === 429 ? retryAfterSeconds(result.headers?.['retry-after']) : undefined,
  };
}

/**
 * The attempt's log row, the dispatch's new state, the webhook's health and, after a failure, the job of the next
 * step: one statement, so a worker dying at any point leaves either all of it or none.
 */
async function record(deps: DeliverDeps, job: DeliverWebhookPayload, target: Target, result: PostResult, outcome: Outcome): Promise<void> {
  const scheduled = !job.redelivery;
  const delays = deps.retryDelaysMs ?? RETRY_DELAYS_S.map((seconds) => seconds * 1000);
  const step = job.retry ?? 0;
  // An attempt cut short by a shutting-down worker is no fault of the receiver's: another worker tries at once.
  const delayMs = result.aborted ? 0 : outcome.retryAfterS !== undefined ? outcome.retryAfterS * 1000 : delays[step];
  const next = scheduled && !outcome.ok && delayMs !== undefined
    ? [deliveryJob({ webhookId: job.webhookId, eventId: job.eventId, retry: step + 1 }, new Date(Date.now() + delayMs))]
    : [];
  await deps.db.raw(
    `with d as (
       update webhook_dispatches
       set attempts = attempts + 1, retry = retry + ?, leased_until = null, updated_at = now(),
           acknowledged_at = case when ? then coalesce(acknowledged_at, now()) else acknowledged_at end
       where webhook_id = ?::uuid and event_id = ?::uuid
       returning attempts
     ), log as (
       insert into webhook_deliveries (account_id, webhook_id, event_id, event_type, attempt, outcome, response_status, error, duration_ms, response_body, redelivery)
       select ?::uuid, ?::uuid, ?::uuid, ?, d.attempts, ?, ?, ?, ?, ?, ? from d
     ), w as (
       update webhooks set
         failing_since = case when ? then null else coalesce(failing_since, now()) end,
         enabled = enabled and (? or not (? or ${FAILING_TOO_LONG})),
         disabled_reason = case when ? or not enabled then disabled_reason when ? then 'gone' when ${FAILING_TOO_LONG} then 'failing' end
       where id = ?::uuid and (not ? or failing_since is not null)
       returning enabled
     ), next as (
       select 1 from graphile_worker.add_jobs(array(
         select json_populate_recordset(null::graphile_worker.job_spec, ?::json) where exists (select 1 from w where w.enabled)))
     )
     select (select count(*) from d) as dispatches, (select count(*) from next) as scheduled`,
    [
      scheduled ? 1 : 0, outcome.ok, job.webhookId, job.eventId,
      target.account_id, job.webhookId, job.eventId, target.event_type, outcome.ok ? 'succeeded' : 'failed',
      result.status ?? null, result.error ?? (outcome.ok ? null : `HTTP ${result.status}`), result.durationMs, result.body ?? null, !scheduled,
      outcome.ok, outcome.ok, outcome.gone, outcome.ok, outcome.gone, job.webhookId, outcome.ok,
      JSON.stringify(next),
    ],
  );
}

function secretsOf(deps: DeliverDeps, target: Target): string[] {
  const current = decryptSecret(deps.secretKey, target.secret_encrypted);
  if (!target.previous_secret_valid || !target.previous_secret_encrypted) return [current];
  return [current, decryptSecret(deps.secretKey, target.previous_secret_encrypted)];
}

/** Gives the lease back and puts the job back in the queue for later, without an attempt: one statement. */
async function postpone(db: Db, job: DeliverWebhookPayload, delayMs: number): Promise<void> {
  const due = dueDispatch(job);
  await db.raw(
    `with released as (update webhook_dispatches d set leased_until = null where ${due.sql} returning 1)
     select 1 from graphile_worker.add_jobs(array(select json_populate_recordset(null::graphile_worker.job_spec, ?::json)))`,
    [...due.bindings, JSON.stringify([deliveryJob(job, new Date(Date.now() + delayMs))])],
  );
}

export function makeDeliverWebhook(deps: DeliverDeps): Task {
  const leaseMs = deps.timeoutMs + 15_000;
  return async (payload, helpers) => {
    if (!isDeliverWebhookPayload(payload) || !isUuid(payload.webhookId) || !isUuid(payload.eventId)) {
      helpers.logger.error('webhooks__deliver: malformed payload, skipped', { payload });
      return;
    }
    const target = await claim(deps.db, payload, leaseMs);
    if (target === 'done') return;
    // Another job is mid-attempt on this dispatch. Failing hands this job back to graphile-worker, which runs it
    // again shortly; by then it will see whether anything is left to send.
    if (target === 'busy') throw new Error('another attempt of this delivery is in flight');

    // Its origin holds its share of this worker's slots: come back later, without an attempt. A job with the same
    // key replaces this one (graphile-worker lets the running one complete without its key).
    const slot = await deps.originSlots.take(URL.parse(target.url)?.origin ?? target.url);
    if ('retryInMs' in slot) return postpone(deps.db, payload, slot.retryInMs);
    try {
      const body = JSON.stringify({ id: payload.eventId, type: target.event_type, createdAt: target.event_created_at, data: target.event_data });
      const timestamp = Math.floor(Date.now() / 1000);
      const problem = urlProblem(target.url, deps.allowInsecure);
      const result = problem
        ? { error: `refused to deliver: the URL ${problem}`, durationMs: 0 }
        : await deps.poster.post(target.url, {
          'Content-Type': 'application/json',
          'User-Agent': USER_AGENT,
          'webhook-id': payload.eventId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': signatureHeader(secretsOf(deps, target), payload.eventId, timestamp, body),
        }, body, helpers.abortSignal);
      await record(deps, payload, target, result, judge(result));
    } finally {
      slot.release();
    }
  };
}

// One attempt to deliver one event to one webhook, whichever job claimed it (the fan-out makes the first attempt;
// webhooks__deliver the retries, redeliveries and pings): signed the Standard Webhooks way, posted, and recorded in
// the delivery log with, on failure, the job of the next step of the retry schedule. Records of attempts that end
// together are written together, in one statement.
import type { Knex } from 'knex';
import pkg from '../package.json' with { type: 'json' };
import type { Timestamp } from '../db/timestamps.ts';
import { deliveryJob, RETRY_DELAYS_S, type DeliverWebhookPayload, type JobSpec } from '../shared/events.ts';
import { createSigner } from '../shared/webhook-secrets.ts';
import { urlProblem } from '../shared/webhook-urls.ts';
import { batched } from './batched.ts';
import type { Poster, PostResult } from './http-post.ts';
import type { OriginSlots } from './origin-slots.ts';

const USER_AGENT = `Stockroom-Webhooks/${pkg.version}`;

/** A webhook that has answered nothing but failures for this long is disabled (`failing`). */
const FAILING_TOO_LONG = "coalesce(w.failing_since <= now() - interval '5 days', false)";
/** The longest `Retry-After` honoured. */
const MAX_RETRY_AFTER_S = 24 * 3600;
/** Attempts recorded by one statement at most. */
const MAX_RECORDS_PER_STATEMENT = 200;

export interface DeliverDeps {
  db: Knex;
  poster: Poster;
  originSlots: OriginSlots;
  secretKey: Buffer;
  timeoutMs: number;
  allowInsecure: boolean;
  allowedPorts: number[];
  /** Overrides RETRY_DELAYS_S (in milliseconds): tests run the schedule in moments. */
  retryDelaysMs?: number[];
}

/** A claimed dispatch (its lease held) with what to send: the columns both claims return. */
export interface Target {
  webhook_id: string;
  event_id: string;
  url: string;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_valid: boolean;
  account_id: string;
  event_type: string;
  event_data: unknown;
  event_created_at: Timestamp;
}

export const TARGET_COLUMNS = `w.url, w.secret_encrypted, w.previous_secret_encrypted, w.account_id,
  coalesce(w.previous_secret_expires_at > now(), false) as previous_secret_valid,
  e.type as event_type, e.data as event_data, e.created_at as event_created_at`;

/** How long a claim holds a dispatch: past the POST's deadline, so that the lease outlives the attempt. */
export const leaseSeconds = (timeoutMs: number) => (timeoutMs + 15_000) / 1000;

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

/** One attempt's row of the record statement. */
interface AttemptRecord {
  webhook_id: string;
  event_id: string;
  account_id: string;
  event_type: string;
  scheduled: boolean;
  ok: boolean;
  gone: boolean;
  response_status: number | null;
  error: string | null;
  duration_ms: number;
  response_body: string | null;
  /** After a failed scheduled attempt: the job of the next step, enqueued while the webhook stays enabled. */
  next: JobSpec | null;
}

// Passed as one array per column: unnest() tells the planner how many rows there are, where a JSON document would
// be guessed at 100 and the dispatches hash-joined by a scan of the whole table.
const RECORD_COLUMNS = ['webhook_id', 'event_id', 'account_id', 'event_type', 'scheduled', 'ok', 'gone', 'response_status',
  'error', 'duration_ms', 'response_body', 'next'] as const satisfies ReadonlyArray<keyof AttemptRecord>;

/**
 * For every attempt: its log row, its dispatch's new state, its webhook's health and the job of its next step, in
 * one statement, so a worker dying at any point leaves either all of it or none. Webhooks are locked in id order,
 * so two workers recording attempts to the same webhooks never wait on each other in a circle, and only as strongly
 * as an update does (`no key update`): the foreign key checks of the log rows share their rows. A webhook's row is
 * written only when something failed or it was failing: successes to a healthy webhook do not queue on its row.
 */
async function recordAttempts(db: Knex, attempts: AttemptRecord[]): Promise<void[]> {
  await db.raw(
    `with x as (
       select * from unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::text[], ?::boolean[], ?::boolean[], ?::boolean[], ?::int[],
         ?::text[], ?::int[], ?::text[], ?::json[])
       as x(webhook_id, event_id, account_id, event_type, scheduled, ok, gone, response_status, error, duration_ms, response_body, next)
     ), d as (
       update webhook_dispatches d
       set attempts = d.attempts + 1, retry = d.retry + x.scheduled::int, leased_until = null, updated_at = now(),
           acknowledged_at = case when x.ok then coalesce(d.acknowledged_at, now()) else d.acknowledged_at end
       from x where d.webhook_id = x.webhook_id and d.event_id = x.event_id
       returning d.webhook_id, d.event_id, d.attempts
     ), log as (
       insert into webhook_deliveries (account_id, webhook_id, event_id, event_type, attempt, outcome, response_status, error, duration_ms, response_body, redelivery)
       select x.account_id, x.webhook_id, x.event_id, x.event_type, d.attempts, case when x.ok then 'succeeded' else 'failed' end,
         x.response_status, x.error, x.duration_ms, x.response_body, not x.scheduled
       from x join d using (webhook_id, event_id)
     ), health as (
       select webhook_id, bool_or(ok) as ok, bool_and(ok) as all_ok, bool_or(gone) as gone from x group by webhook_id
     ), locked as (
       select w.id from webhooks w join health h on h.webhook_id = w.id
       where not h.all_ok or w.failing_since is not null
       order by w.id for no key update of w
     ), w as (
       update webhooks w set
         failing_since = case when h.ok then null else coalesce(w.failing_since, now()) end,
         enabled = w.enabled and not h.gone and (h.ok or not ${FAILING_TOO_LONG}),
         disabled_reason = case when not w.enabled then w.disabled_reason when h.gone then 'gone'
                                when not h.ok and ${FAILING_TOO_LONG} then 'failing' end
       from health h join locked l on l.id = h.webhook_id
       where w.id = h.webhook_id
       returning w.id, w.enabled
     ), next as (
       -- add_jobs costs a fifth of the statement even with nothing to add: called only when there is.
       select 1 from graphile_worker.add_jobs(array(
         select json_populate_record(null::graphile_worker.job_spec, x.next)
         from x join w on w.id = x.webhook_id where x.next is not null and w.enabled))
       where exists (select 1 from x where x.next is not null)
     )
     select (select count(*) from next) as scheduled`,
    // node-postgres sends each as an array literal, nulls included (knex's types leave those out).
    RECORD_COLUMNS.map((column) => attempts.map((attempt) =>
      column === 'next' && attempt.next ? JSON.stringify(attempt.next) : attempt[column]) as Knex.Value),
  );
  return attempts.map(() => undefined);
}

export interface Deliveries {
  /**
   * Makes the attempt `job` stands for at `target`, whose lease the caller holds: posts it and records it, or,
   * when its origin has no slot to spare, gives the lease back and enqueues the attempt for later.
   */
  attempt(job: DeliverWebhookPayload, target: Target, signal: AbortSignal): Promise<void>;
}

export function createDeliveries(deps: DeliverDeps): Deliveries {
  const delays = deps.retryDelaysMs ?? RETRY_DELAYS_S.map((seconds) => seconds * 1000);
  const sign = createSigner(deps.secretKey);
  const record = batched(recordAttempts.bind(null, deps.db), MAX_RECORDS_PER_STATEMENT);

  function post(job: DeliverWebhookPayload, target: Target, signal: AbortSignal): Promise<PostResult> {
    const problem = urlProblem(target.url, { allowInsecure: deps.allowInsecure, ports: deps.allowedPorts });
    if (problem) return Promise.resolve({ error: `refused to deliver: the URL ${problem}`, durationMs: 0 });
    const body = JSON.stringify({ id: job.eventId, type: target.event_type, createdAt: target.event_created_at, data: target.event_data });
    const timestamp = Math.floor(Date.now() / 1000);
    return deps.poster.post(target.url, {
      'Content-Type': 'application/json',
      'User-Agent': USER_AGENT,
      'webhook-id': job.eventId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': sign(target.previous_secret_valid && target.previous_secret_encrypted
        ? [target.secret_encrypted, target.previous_secret_encrypted] : [target.secret_encrypted], job.eventId, timestamp, body),
    }, body, signal);
  }

  function toRecord(job: DeliverWebhookPayload, target: Target, result: PostResult): AttemptRecord {
    const outcome = judge(result);
    const scheduled = !job.redelivery;
    const step = job.retry ?? 0;
    // An attempt cut short by a shutting-down worker is no fault of the receiver's: another worker tries at once.
    const delayMs = result.aborted ? 0 : outcome.retryAfterS !== undefined ? outcome.retryAfterS * 1000 : delays[step];
    return {
      webhook_id: job.webhookId,
      event_id: job.eventId,
      account_id: target.account_id,
      event_type: target.event_type,
      scheduled,
      ok: outcome.ok,
      gone: outcome.gone,
      response_status: result.status ?? null,
      error: result.error ?? (outcome.ok ? null : `HTTP ${result.status}`),
      duration_ms: result.durationMs,
      response_body: result.body ?? null,
      next: scheduled && !outcome.ok && delayMs !== undefined
        ? deliveryJob({ webhookId: job.webhookId, eventId: job.eventId, retry: step + 1 }, new Date(Date.now() + delayMs))
        : null,
    };
  }

  /** Gives the lease back and enqueues the attempt for later, without making it: one statement. */
  async function postpone(job: DeliverWebhookPayload, delayMs: number): Promise<void> {
    await deps.db.raw(
      `with released as (update webhook_dispatches set leased_until = null where webhook_id = ?::uuid and event_id = ?::uuid returning 1)
       select 1 from graphile_worker.add_jobs(array(select json_populate_recordset(null::graphile_worker.job_spec, ?::json)))`,
      [job.webhookId, job.eventId, JSON.stringify([deliveryJob(job, new Date(Date.now() + delayMs))])],
    );
  }

  return {
    async attempt(job, target, signal) {
      const slot = await deps.originSlots.take(URL.parse(target.url)?.origin ?? target.url);
      if ('retryInMs' in slot) return postpone(job, slot.retryInMs);
      let result: PostResult;
      try {
        result = await post(job, target, signal);
      } finally {
        slot.release();
      }
      await record(toRecord(job, target, result));
    },
  };
}

// One delivery attempt of one event to one webhook, signed the Standard Webhooks way, recorded in the delivery
// log, and on failure followed by the next job of the retry schedule. The dispatch row decides what may be sent:
// an acknowledged event is never sent again (but on an explicit redelivery), and a lease keeps two jobs from
// sending one dispatch at once.
import type { Task } from 'graphile-worker';
import pkg from '../package.json' with { type: 'json' };
import type { Db } from '../db/knex.ts';
import { isUuid } from '../shared/accounts.ts';
import { addJobs, deliveryJob, isDeliverWebhookPayload, type DeliverWebhookPayload } from '../shared/events.ts';
import { decryptSecret, signatureHeader } from '../shared/webhook-secrets.ts';
import { urlProblem } from '../shared/webhook-urls.ts';
import type { Poster, PostResult } from './http-post.ts';
import type { OriginSlots } from './origin-slots.ts';

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
  enabled: boolean;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_valid: boolean;
  account_id: string;
  event_type: string;
  event_data: unknown;
  event_created_at: Date;
}

function loadTarget(db: Db, job: DeliverWebhookPayload): Promise<Target | undefined> {
  return db('webhook_dispatches as d')
    .join('webhooks as w', 'w.id', 'd.webhook_id')
    .join('events as e', 'e.id', 'd.event_id')
    .where({ 'd.webhook_id': job.webhookId, 'd.event_id': job.eventId })
    .first(
      'w.url', 'w.enabled', 'w.secret_encrypted', 'w.previous_secret_encrypted', 'w.account_id',
      db.raw('coalesce(w.previous_secret_expires_at > now(), false) as previous_secret_valid'),
      'e.type as event_type', 'e.data as event_data', 'e.created_at as event_created_at',
    );
}

/**
 * Takes the dispatch's lease for this job's attempt: `claimed`; `busy` while another attempt holds it; `done` when
 * there is nothing left for this job (acknowledged, or its step of the schedule already taken).
 */
async function claim(db: Db, job: DeliverWebhookPayload, leaseMs: number): Promise<'claimed' | 'busy' | 'done'> {
  const dispatch = db('webhook_dispatches').where({ webhook_id: job.webhookId, event_id: job.eventId });
  if (!job.redelivery) dispatch.whereNull('acknowledged_at').where('retry', job.retry ?? 0);
  const claimed = await dispatch.clone()
    .where((q) => q.whereNull('leased_until').orWhere('leased_until', '<', db.fn.now()))
    .update({ leased_until: db.raw('now() + make_interval(secs => ?)', [leaseMs / 1000]) });
  if (claimed === 1) return 'claimed';
  return (await dispatch.first('leased_until')) ? 'busy' : 'done';
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

/** The attempt's log row, the dispatch's new state, the webhook's health and the next step: one transaction. */
async function record(deps: DeliverDeps, job: DeliverWebhookPayload, target: Target, result: PostResult, outcome: Outcome): Promise<void> {
  const scheduled = !job.redelivery;
  await deps.db.transaction(async (trx) => {
    const [dispatch] = await trx('webhook_dispatches')
      .where({ webhook_id: job.webhookId, event_id: job.eventId })
      .update({
        attempts: trx.raw('attempts + 1'),
        retry: scheduled ? trx.raw('retry + 1') : trx.raw('retry'),
        leased_until: null,
        acknowledged_at: outcome.ok ? trx.raw('coalesce(acknowledged_at, now())') : trx.raw('acknowledged_at'),
        updated_at: trx.fn.now(),
      })
      .returning(['attempts', 'retry']);
    await trx('webhook_deliveries').insert({
      account_id: target.account_id,
      webhook_id: job.webhookId,
      event_id: job.eventId,
      event_type: target.event_type,
      attempt: dispatch.attempts,
      outcome: outcome.ok ? 'succeeded' : 'failed',
      response_status: result.status ?? null,
      error: result.error ?? (outcome.ok ? null : `HTTP ${result.status}`),
      duration_ms: result.durationMs,
      response_body: result.body ?? null,
      redelivery: !scheduled,
    });

    const [webhook] = await trx('webhooks')
      .where({ id: job.webhookId })
      .update(outcome.ok
        ? { failing_since: null }
        : {
          failing_since: trx.raw('coalesce(failing_since, now())'),
          enabled: trx.raw(`enabled and not (? or ${FAILING_TOO_LONG})`, [outcome.gone]),
          disabled_reason: trx.raw(`case when not enabled then disabled_reason when ? then 'gone' when ${FAILING_TOO_LONG} then 'failing' end`, [outcome.gone]),
        })
      .returning('enabled');

    const delays = deps.retryDelaysMs ?? RETRY_DELAYS_S.map((s) => s * 1000);
    const next = dispatch.retry as number;
    if (scheduled && !outcome.ok && webhook?.enabled && next <= delays.length) {
      // An attempt cut short by a shutting-down worker is no fault of the receiver's: another worker tries at once.
      const delayMs = result.aborted ? 0 : outcome.retryAfterS !== undefined ? outcome.retryAfterS * 1000 : delays[next - 1]!;
      await addJobs(trx, [deliveryJob({ webhookId: job.webhookId, eventId: job.eventId, retry: next }, new Date(Date.now() + delayMs))]);
    }
  });
}

function secretsOf(deps: DeliverDeps, target: Target): string[] {
  const current = decryptSecret(deps.secretKey, target.secret_encrypted);
  if (!target.previous_secret_valid || !target.previous_secret_encrypted) return [current];
  return [current, decryptSecret(deps.secretKey, target.previous_secret_encrypted)];
}

export function makeDeliverWebhook(deps: DeliverDeps): Task {
  const leaseMs = deps.timeoutMs + 15_000;
  return async (payload, helpers) => {
    if (!isDeliverWebhookPayload(payload) || !isUuid(payload.webhookId) || !isUuid(payload.eventId)) {
      helpers.logger.error('webhooks__deliver: malformed payload, skipped', { payload });
      return;
    }
    // The webhook deleted or disabled since: nothing to send.
    const target = await loadTarget(deps.db, payload);
    if (!target || !target.enabled) return;
    // Its origin has its share of this worker's slots in flight: come back later, without an attempt. A job with
    // the same key replaces this one (graphile-worker lets the running one complete without its key).
    const slot = await deps.originSlots.take(URL.parse(target.url)?.origin ?? target.url);
    if ('retryInMs' in slot) {
      await addJobs(deps.db, [deliveryJob(payload, new Date(Date.now() + slot.retryInMs))]);
      return;
    }
    try {
      await attempt(deps, payload, target, leaseMs, helpers.abortSignal);
    } finally {
      slot.release();
    }
  };
}

async function attempt(deps: DeliverDeps, payload: DeliverWebhookPayload, target: Target, leaseMs: number, signal: AbortSignal): Promise<void> {
  const claimed = await claim(deps.db, payload, leaseMs);
  if (claimed === 'done') return;
  // Another job is mid-attempt on this dispatch. Failing hands this job back to graphile-worker, which runs it
  // again shortly; by then it will see whether anything is left to send.
  if (claimed === 'busy') throw new Error('another attempt of this delivery is in flight');

  const body = JSON.stringify({ id: payload.eventId, type: target.event_type, createdAt: target.event_created_at.toISOString(), data: target.event_data });
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
    }, body, signal);
  await record(deps, payload, target, result, judge(result));
}

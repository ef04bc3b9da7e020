// The attempts the fan-out does not make: retries on the schedule, redeliveries and pings, and first attempts its
// origin had no slot for. The dispatch row decides what may be sent: an acknowledged event is never sent again (but
// on an explicit redelivery), and a lease keeps two jobs from sending one dispatch at once.
import type { Task } from 'graphile-worker';
import type { Knex } from 'knex';
import { isUuid } from '../shared/guards.ts';
import { isDeliverWebhookPayload, type DeliverWebhookPayload } from '../shared/events.ts';
import { leaseSeconds, TARGET_COLUMNS, type Deliveries, type Target } from './deliveries.ts';

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
async function claim(db: Knex, job: DeliverWebhookPayload, timeoutMs: number): Promise<Target | 'busy' | 'done'> {
  const due = dueDispatch(job);
  const { rows } = await db.raw<{ rows: Target[] }>(
    `update webhook_dispatches d set leased_until = now() + make_interval(secs => ?)
     from webhooks w, events e
     where ${due.sql} and w.id = d.webhook_id and e.id = d.event_id and w.enabled
       and (d.leased_until is null or d.leased_until < now())
     returning d.webhook_id, d.event_id, ${TARGET_COLUMNS}`,
    [leaseSeconds(timeoutMs), ...due.bindings],
  );
  if (rows[0]) return rows[0];
  const { rows: leased } = await db.raw(
    `select 1 from webhook_dispatches d join webhooks w on w.id = d.webhook_id where ${due.sql} and w.enabled`, due.bindings);
  return leased.length ? 'busy' : 'done';
}

export function makeDeliverWebhook(db: Knex, deliveries: Deliveries, timeoutMs: number): Task {
  return async (payload, helpers) => {
    if (!isDeliverWebhookPayload(payload) || !isUuid(payload.webhookId) || !isUuid(payload.eventId)) {
      helpers.logger.error('webhooks__deliver: malformed payload, skipped', { payload });
      return;
    }
    const target = await claim(db, payload, timeoutMs);
    if (target === 'done') return;
    // Another job is mid-attempt on this dispatch. Failing hands this job back to graphile-worker, which runs it
    // again shortly; by then it will see whether anything is left to send.
    if (target === 'busy') throw new Error('another attempt of this delivery is in flight');
    // A postponed attempt's job has the same key as this one and replaces it (graphile-worker lets the running
    // one complete without its key).
    await deliveries.attempt(payload, target, helpers.abortSignal);
  };
}

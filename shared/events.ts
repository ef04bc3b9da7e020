// Events: recorded in the transaction of the change that caused them, with the job that delivers them.
// A committed change always yields its events and jobs; a rolled-back one never does.
import type { Knex } from 'knex';
import type { Timestamp } from '../db/timestamps.ts';

/** The kinds a webhook can subscribe to (`*` is all of them). */
export const EVENT_TYPES = [
  'item.created',
  'item.updated',
  'stock.adjusted',
  'sales_order.created',
  'sales_order.fulfilled',
  'sales_order.cancelled',
  'purchase_order.created',
  'purchase_order.confirmed',
  'purchase_order.held',
  'purchase_order.closed',
  'purchase_order.cancelled',
  'production_record.created',
] as const;

export type EventType = (typeof EVENT_TYPES)[number];

/** Sent only to the subscription that asked for it; never fanned out, never listed by /events. */
export const PING_EVENT = 'webhook.ping';

export interface NewEvent {
  type: EventType;
  /** The record as the API returns it. */
  data: unknown;
}

/** An event as /events lists it and webhooks deliver it. */
export interface StoredEvent {
  id: string;
  type: EventType | typeof PING_EVENT;
  createdAt: string;
  data: unknown;
}

/** The graphile-worker task that takes an event onwards (webhook fan-out). */
export const DISPATCH_EVENT_TASK = 'events__dispatch';
/** The task that makes one delivery attempt of one event to one webhook. */
export const DELIVER_WEBHOOK_TASK = 'webhooks__deliver';

export interface DispatchEventPayload {
  eventId: string;
}

export interface DeliverWebhookPayload {
  webhookId: string;
  eventId: string;
  /** The position in the retry schedule this job is allowed to attempt; absent on a redelivery. */
  retry?: number;
  /** A one-off attempt asked for through the API, whether or not the event was delivered before. */
  redelivery?: boolean;
}

const isObject = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** Job payloads are unknown until checked: a job may have been enqueued by older code. */
export function isDispatchEventPayload(payload: unknown): payload is DispatchEventPayload {
  return isObject(payload) && typeof payload.eventId === 'string';
}

export function isDeliverWebhookPayload(payload: unknown): payload is DeliverWebhookPayload {
  return isObject(payload) && typeof payload.webhookId === 'string' && typeof payload.eventId === 'string'
    && (payload.retry === undefined || Number.isInteger(payload.retry))
    && (payload.redelivery === undefined || typeof payload.redelivery === 'boolean');
}

export interface JobSpec {
  identifier: string;
  payload: unknown;
  job_key?: string;
  run_at?: string;
  max_attempts?: number;
}

/**
 * Enqueues jobs in one statement through `db` (pass the transaction of the change: graphile_worker.add_jobs then
 * commits or rolls back with it; WorkerUtils.addJob would use a connection of its own).
 */
export async function addJobs(db: Knex, jobs: JobSpec[]): Promise<void> {
  if (jobs.length === 0) return;
  await db.raw(
    'select 1 from graphile_worker.add_jobs(array(select json_populate_recordset(null::graphile_worker.job_spec, ?::json)))',
    [JSON.stringify(jobs)],
  );
}

// Attempts of the job itself, not of the delivery: they cover a worker that failed before it could record the
// attempt (the database was down, say). The delivery's own schedule is in jobs/deliveries.ts.
const DELIVERY_JOB_ATTEMPTS = 10;

export function deliveryJob(payload: DeliverWebhookPayload, runAt?: Date): JobSpec {
  return {
    identifier: DELIVER_WEBHOOK_TASK,
    payload,
    // One pending job per step of the schedule; redeliveries are each their own.
    job_key: payload.redelivery ? undefined : `webhook:${payload.webhookId}:${payload.eventId}:${payload.retry ?? 0}`,
    run_at: runAt?.toISOString(),
    max_attempts: DELIVERY_JOB_ATTEMPTS,
  };
}

interface EventRow {
  id: string;
  type: StoredEvent['type'];
  data: unknown;
  created_at: Timestamp;
}

export function toStoredEvent(row: EventRow): StoredEvent {
  return { id: row.id, type: row.type, createdAt: row.created_at, data: row.data };
}

async function insertEvents(trx: Knex.Transaction, accountId: string, events: Array<{ type: string; data: unknown }>): Promise<StoredEvent[]> {
  const rows: EventRow[] = await trx('events')
    .insert(events.map((event) => ({ account_id: accountId, type: event.type, data: JSON.stringify(event.data) })))
    .returning(['id', 'type', 'data', 'created_at']);
  return rows.map(toStoredEvent);
}

/** Records the events and enqueues one dispatch (fan-out) job each, in `trx`. */
export async function recordEvents(trx: Knex.Transaction, accountId: string, events: NewEvent[]): Promise<StoredEvent[]> {
  if (events.length === 0) return [];
  const stored = await insertEvents(trx, accountId, events);
  await addJobs(trx, stored.map((event) => ({
    identifier: DISPATCH_EVENT_TASK,
    payload: { eventId: event.id } satisfies DispatchEventPayload,
    job_key: `event:${event.id}`,
  })));
  return stored;
}

export async function recordEvent(trx: Knex.Transaction, accountId: string, event: NewEvent): Promise<StoredEvent> {
  const [stored] = await recordEvents(trx, accountId, [event]);
  return stored!;
}

/**
 * Makes sure `eventId` is dispatched to `webhookId` (the lasting once-per-subscription row), and enqueues
 * `job`. Used by ping and redeliver; the fan-out does the same for many webhooks in one statement.
 */
export async function dispatchTo(trx: Knex.Transaction, accountId: string, webhookId: string, eventId: string, job: JobSpec): Promise<void> {
  await trx('webhook_dispatches')
    .insert({ account_id: accountId, webhook_id: webhookId, event_id: eventId })
    .onConflict(['webhook_id', 'event_id']).ignore();
  await addJobs(trx, [job]);
}

/** A `webhook.ping` event, delivered (signed, logged, retried) to one webhook alone. */
export async function recordPing(trx: Knex.Transaction, accountId: string, webhookId: string): Promise<StoredEvent> {
  const [event] = await insertEvents(trx, accountId, [{ type: PING_EVENT, data: { webhookId } }]);
  await dispatchTo(trx, accountId, webhookId, event!.id, deliveryJob({ webhookId, eventId: event!.id, retry: 0 }));
  return event!;
}

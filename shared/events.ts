// Events and the jobs that carry them onward: the kinds, the job payloads (checked: a job may have been enqueued
// by older code), the job keys, and the retry schedule of a delivery. No SQL here: db/events.ts records events
// and enqueues these jobs in the transaction of the change; the worker (jobs/) runs them; the consistency check
// (db/consistency.ts) finds them by the same keys.
import { isRecord } from './guards.ts';

/** The kinds a webhook can subscribe to (`*` is all of them). */
export const EVENT_TYPES = [
  'item.created',
  'item.updated',
  'stock.adjusted',
  'sales_order.created',
  'sales_order.partially_fulfilled',
  'sales_order.fulfilled',
  'sales_order.cancelled',
  'purchase_order.created',
  'purchase_order.confirmed',
  'purchase_order.held',
  'purchase_order.partially_received',
  'purchase_order.closed',
  'purchase_order.cancelled',
  'production_record.created',
  'reservation.created',
  'reservation.released',
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

export function isDispatchEventPayload(payload: unknown): payload is DispatchEventPayload {
  return isRecord(payload) && typeof payload.eventId === 'string';
}

export function isDeliverWebhookPayload(payload: unknown): payload is DeliverWebhookPayload {
  return isRecord(payload) && typeof payload.webhookId === 'string' && typeof payload.eventId === 'string'
    && (payload.retry === undefined || Number.isInteger(payload.retry))
    && (payload.redelivery === undefined || typeof payload.redelivery === 'boolean');
}

/** graphile-worker's `job_spec`, as `add_jobs` takes it. */
export interface JobSpec {
  identifier: string;
  payload: unknown;
  job_key?: string;
  run_at?: string;
  max_attempts?: number;
}

// Job keys: graphile-worker keeps one pending job per key, so a key says what may be pending only once.

/** An event's fan-out: one per event. */
export const dispatchJobKey = (eventId: string): string => `event:${eventId}`;

/** One step of a delivery's retry schedule: one pending attempt per step (redeliveries have no key). */
export const deliveryJobKey = (webhookId: string, eventId: string, retry: number | string): string => `webhook:${webhookId}:${eventId}:${retry}`;

/**
 * A job key as a SQL expression over columns, built by the key's own builder, so that SQL finding jobs by key
 * (the consistency check) cannot drift from the code that makes them: `jobKeySql(dispatchJobKey, 'e.id')` is
 * `'event:' || e.id::text`.
 */
export function jobKeySql<Parts extends unknown[]>(build: (...parts: Parts) => string, ...columns: { [K in keyof Parts]: string }): string {
  const marked = build(...(columns.map((_, index) => `\u0000${index}\u0000`) as Parts));
  return marked.split(/\u0000(\d+)\u0000/)
    .map((piece, index) => (index % 2 ? `${columns[Number(piece)]}::text` : piece && `'${piece.replaceAll("'", "''")}'`))
    .filter(Boolean)
    .join(' || ');
}

/**
 * Seconds to wait after each failed scheduled attempt before the next: 15 attempts in all, the last about 3 days,
 * 3 hours and 43 minutes after the first. Then the event is given up for that subscription.
 */
export const RETRY_DELAYS_S = [5, 30, 120, 600, 1800, 3600, 7200, 14400, 28800, 43200, 43200, 43200, 43200, 43200];

// Attempts of the job itself, not of the delivery: they cover a worker that failed before it could record the
// attempt (the database was down, say). The delivery's own schedule is RETRY_DELAYS_S.
const DELIVERY_JOB_ATTEMPTS = 10;

export function deliveryJob(payload: DeliverWebhookPayload, runAt?: Date): JobSpec {
  return {
    identifier: DELIVER_WEBHOOK_TASK,
    payload,
    job_key: payload.redelivery ? undefined : deliveryJobKey(payload.webhookId, payload.eventId, payload.retry ?? 0),
    run_at: runAt?.toISOString(),
    max_attempts: DELIVERY_JOB_ATTEMPTS,
  };
}

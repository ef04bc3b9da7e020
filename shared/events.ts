// Events: recorded in the transaction of the change that caused them, with the job that delivers them.
// A committed change always yields its events and jobs; a rolled-back one never does.
import type { Knex } from 'knex';

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

export interface NewEvent {
  type: EventType;
  /** The record as the API returns it. */
  data: unknown;
}

export interface StoredEvent {
  id: string;
  accountId: string;
  type: EventType;
  data: unknown;
  createdAt: string;
}

/** The graphile-worker task that takes an event onwards (webhook fan-out). */
export const DISPATCH_EVENT_TASK = 'events__dispatch';

export interface DispatchEventPayload {
  eventId: string;
}

/** Job payloads are unknown until checked: a job may have been enqueued by older code. */
export function isDispatchEventPayload(payload: unknown): payload is DispatchEventPayload {
  return typeof payload === 'object' && payload !== null && typeof (payload as { eventId?: unknown }).eventId === 'string';
}

interface EventRow {
  id: string;
  account_id: string;
  type: EventType;
  data: unknown;
  created_at: Date;
}

/**
 * Records the events and enqueues one dispatch job each, through `trx`: graphile_worker.add_jobs runs on the
 * same connection, so the jobs commit or roll back with the change. (WorkerUtils.addJob would use its own.)
 */
export async function recordEvents(trx: Knex.Transaction, accountId: string, events: NewEvent[]): Promise<StoredEvent[]> {
  if (events.length === 0) return [];
  const rows: EventRow[] = await trx('events')
    .insert(events.map((event) => ({ account_id: accountId, type: event.type, data: JSON.stringify(event.data) })))
    .returning(['id', 'account_id', 'type', 'data', 'created_at']);
  const jobs = rows.map((row) => ({
    identifier: DISPATCH_EVENT_TASK,
    payload: { eventId: row.id } satisfies DispatchEventPayload,
    job_key: `event:${row.id}`,
  }));
  await trx.raw(
    'select 1 from graphile_worker.add_jobs(array(select json_populate_recordset(null::graphile_worker.job_spec, ?::json)))',
    [JSON.stringify(jobs)],
  );
  return rows.map((row) => ({
    id: row.id,
    accountId: row.account_id,
    type: row.type,
    data: row.data,
    createdAt: row.created_at.toISOString(),
  }));
}

export async function recordEvent(trx: Knex.Transaction, accountId: string, event: NewEvent): Promise<StoredEvent> {
  const [stored] = await recordEvents(trx, accountId, [event]);
  return stored!;
}

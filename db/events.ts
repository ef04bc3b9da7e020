// Events are recorded in the transaction of the change that caused them, with the job that takes each onward:
// a committed change always yields its events and jobs; a rolled-back one never does.
import type { Knex } from 'knex';
import { deliveryJob, dispatchJob, PING_EVENT, type JobSpec, type NewEvent, type StoredEvent } from '../shared/events.ts';
import type { Timestamp } from './timestamps.ts';

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

/** Records the events and enqueues one dispatch (fan-out) job each, with `alsoEnqueue`, in `trx`. */
export async function recordEvents(trx: Knex.Transaction, accountId: string, events: NewEvent[], alsoEnqueue: JobSpec[] = []): Promise<StoredEvent[]> {
  const stored = events.length ? await insertEvents(trx, accountId, events) : [];
  await addJobs(trx, [...stored.map((event) => dispatchJob(event.id)), ...alsoEnqueue]);
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

// Events are recorded in the transaction of the change that caused them, with the job that takes each onward:
// a committed change always yields its events and jobs; a rolled-back one never does.
import type { Knex } from 'knex';
import {
  deliveryJob, DISPATCH_EVENT_TASK, dispatchJobKey, jobKeySql, PING_EVENT, type JobSpec, type NewEvent, type StoredEvent,
} from '../shared/events.ts';
import { runStatement, Statement } from './statement.ts';
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

/**
 * The CTEs that record events and enqueue their jobs inside a statement: `e`, the events inserted from `source` (a
 * select of `type`, `data` as json, keeping the record's key order, and `n`, their order), and `j`, one dispatch
 * (fan-out) job per event with `also`. The statement must read `j` (a select CTE runs only when read): `(select jobs from j)`.
 *
 * The dispatch jobs are inserted as add_jobs would insert them, but by the statement itself: add_jobs is a PL/pgSQL
 * function of four statements, planned on every call (see PLAN_EVERY_ENQUEUE), a third of an adjustment's statement.
 * Nothing else of add_jobs' work applies to them: their task exists (ENSURE_DISPATCH_TASK, at migration), they have
 * no queue, and their keys are new (an event's id), so that no job holds one yet. The `jobs:insert` notification
 * wakes the workers as add_jobs' does. `also` (jobs of other kinds, with keys that may be taken) still goes through
 * add_jobs.
 */
export function eventCtes(statement: Statement, accountId: string, source: string, also: JobSpec[]): string {
  const others = also.length
    ? ` + (select count(*) from graphile_worker.add_jobs(array(
         select json_populate_recordset(null::graphile_worker.job_spec, ${statement.param(JSON.stringify(also), 'json')}))))`
    : '';
  return `e as (
       insert into events (account_id, type, data)
       select ${statement.param(accountId, 'uuid')}, x.type, x.data from (${source}) x order by x.n
       returning id, type, data, created_at, seq
     ), jd as (
       -- Each event's fan-out job: DispatchEventPayload, keyed by dispatchJobKey.
       insert into graphile_worker._private_jobs (task_id, payload, key)
       select (select t.id from graphile_worker._private_tasks t where t.identifier = ${statement.param(DISPATCH_EVENT_TASK, 'text')}),
         json_build_object('eventId', e.id), ${jobKeySql(dispatchJobKey, 'e.id')}
       from e
       returning 1
     ), j as (
       select n${others} as jobs, case when n > 0 then pg_notify('jobs:insert', json_build_object('count', n)::text) end as woken
       from (select count(*) as n from jd) x
     )`;
}

/**
 * Records the events and enqueues one dispatch (fan-out) job each, with `alsoEnqueue`, in `trx`: one statement,
 * whatever their number.
 */
export async function recordEvents(trx: Knex, accountId: string, events: NewEvent[], alsoEnqueue: JobSpec[] = []): Promise<StoredEvent[]> {
  if (events.length === 0) {
    await addJobs(trx, alsoEnqueue);
    return [];
  }
  const statement = new Statement();
  const source = `select x.type, x.data, x.n from unnest(${statement.column(events, (event) => event.type, 'text')},
    ${statement.column(events, (event) => JSON.stringify(event.data), 'json')}) with ordinality as x(type, data, n)`;
  const rows = await runStatement<EventRow>(trx, statement,
    `with ${eventCtes(statement, accountId, source, alsoEnqueue)} select e.id, e.type, e.data, e.created_at from e, j order by e.seq`);
  return rows.map(toStoredEvent);
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

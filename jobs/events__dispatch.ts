// Fans one event out: a dispatch row and a delivery job for every enabled webhook of its account that wants
// its kind. The dispatch row's key (webhook, event) makes a re-run, or a duplicated job, enqueue nothing twice.
import type { Task } from 'graphile-worker';
import type { Db } from '../db/knex.ts';
import { isUuid } from '../shared/accounts.ts';
import { deliveryJob, isDispatchEventPayload, PING_EVENT } from '../shared/events.ts';

export function makeDispatchEvent(db: Db): Task {
  return async (payload, helpers) => {
    if (!isDispatchEventPayload(payload) || !isUuid(payload.eventId)) {
      // Retrying cannot fix a malformed payload: log it and let the job complete.
      helpers.logger.error('events__dispatch: malformed payload, skipped', { payload });
      return;
    }
    const { rows: [wanted] } = await db.raw<{ rows: Array<{ account_id: string; webhook_ids: string[] }> }>(
      `select e.account_id, array(
         select w.id from webhooks w
         where w.account_id = e.account_id and w.enabled and (e.type = any(w.events) or '*' = any(w.events))
       ) as webhook_ids
       from events e where e.id = ?::uuid and e.type <> ?`,
      [payload.eventId, PING_EVENT],
    );
    if (!wanted?.webhook_ids.length) return;
    // One statement: the dispatch rows, and jobs for those that were not there yet.
    const jobs = wanted.webhook_ids.map((webhookId) => deliveryJob({ webhookId, eventId: payload.eventId, retry: 0 }));
    const { rows: [{ count }] } = await db.raw(
      `with specs as (
         select spec, (spec.payload->>'webhookId')::uuid as webhook_id
         from json_populate_recordset(null::graphile_worker.job_spec, ?::json) as spec
       ), inserted as (
         insert into webhook_dispatches (webhook_id, event_id, account_id)
         select webhook_id, ?::uuid, ?::uuid from specs
         on conflict do nothing
         returning webhook_id
       )
       select count(*)::int as count from graphile_worker.add_jobs(array(
         select s.spec from specs s join inserted using (webhook_id)))`,
      [JSON.stringify(jobs), payload.eventId, wanted.account_id],
    );
    helpers.logger.debug(`event dispatched to ${count} webhook(s)`, { eventId: payload.eventId });
  };
}

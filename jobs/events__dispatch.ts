// Fans one event out: a dispatch row and a delivery job for every enabled webhook of its account that wants
// its kind. The dispatch row's key (webhook, event) makes a re-run, or a duplicated job, enqueue nothing twice.
import type { Task } from 'graphile-worker';
import type { Db } from '../db/knex.ts';
import { isUuid } from '../shared/accounts.ts';
import { addJobs, deliveryJob, isDispatchEventPayload, PING_EVENT } from '../shared/events.ts';

export function makeDispatchEvent(db: Db): Task {
  return async (payload, helpers) => {
    if (!isDispatchEventPayload(payload) || !isUuid(payload.eventId)) {
      // Retrying cannot fix a malformed payload: log it and let the job complete.
      helpers.logger.error('events__dispatch: malformed payload, skipped', { payload });
      return;
    }
    const count = await db.transaction(async (trx) => {
      const { rows } = await trx.raw<{ rows: Array<{ webhook_id: string }> }>(
        `insert into webhook_dispatches (webhook_id, event_id, account_id)
         select w.id, e.id, e.account_id
         from events e join webhooks w on w.account_id = e.account_id
         where e.id = ?::uuid and e.type <> ? and w.enabled and (e.type = any(w.events) or '*' = any(w.events))
         on conflict do nothing
         returning webhook_id`,
        [payload.eventId, PING_EVENT],
      );
      await addJobs(trx, rows.map((row) => deliveryJob({ webhookId: row.webhook_id, eventId: payload.eventId, retry: 0 })));
      return rows.length;
    });
    helpers.logger.debug(`event dispatched to ${count} webhook(s)`, { eventId: payload.eventId });
  };
}

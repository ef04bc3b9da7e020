// Takes one recorded event onwards. Until webhook subscriptions exist it only confirms the event and logs it;
// webhook fan-out will start here. Safe to run twice: it changes nothing.
import type { Task } from 'graphile-worker';
import { isDispatchEventPayload } from '../shared/events.ts';

export const dispatchEvent: Task = async (payload, helpers) => {
  if (!isDispatchEventPayload(payload)) {
    // Retrying cannot fix a malformed payload: log it and let the job complete.
    helpers.logger.error('events__dispatch: malformed payload, skipped', { payload });
    return;
  }
  const { rows } = await helpers.withPgClient((client) =>
    client.query<{ id: string; type: string; account_id: string }>(
      'select id, type, account_id from events where id = $1::uuid',
      [payload.eventId],
    ));
  const event = rows[0];
  if (!event) {
    helpers.logger.warn('events__dispatch: no such event, skipped', { eventId: payload.eventId });
    return;
  }
  helpers.logger.info(`event ${event.type}`, { eventId: event.id, accountId: event.account_id, type: event.type });
};

// Releases a reservation when its `expiresAt` comes: the job is enqueued with the reservation, to run at that time,
// so it survives restarts and needs no polling. Safe to run twice, or by two workers at once: the reservation is
// locked and released only while it is open and due.
import type { Task } from 'graphile-worker';
import type { Knex } from 'knex';
import { applyStock, lockReservations } from '../db/stock.ts';
import { isUuid } from '../shared/guards.ts';
import { isExpireReservationPayload } from '../shared/stock.ts';

export function makeExpireReservation(db: Knex): Task {
  return async (payload, helpers) => {
    if (!isExpireReservationPayload(payload) || !isUuid(payload.reservationId)) {
      helpers.logger.error('reservations__expire: malformed payload, skipped', { payload });
      return;
    }
    await db.transaction(async (trx) => {
      const found: { account_id: string } | undefined = await trx('reservations').where({ id: payload.reservationId }).first('account_id');
      if (!found) return;
      const [row] = await lockReservations(trx, found.account_id, (query) => query.where('id', payload.reservationId).where('expires_at', '<=', trx.fn.now()));
      if (!row) return;
      await applyStock(trx, { accountId: row.account_id, userId: row.created_by, close: [{ row, quantity: row.quantity, as: 'released', reason: 'expired' }] });
    });
  };
}

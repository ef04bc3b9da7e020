// Releases a reservation when its `expiresAt` comes: the job is enqueued with the reservation, to run at that time,
// so it survives restarts and needs no polling. Safe to run twice, or by two workers at once: the reservation is
// released only while it is open and due, by one statement that locks it.
import type { Task } from 'graphile-worker';
import type { Knex } from 'knex';
import { releaseReservation } from '../db/stock.ts';
import { isUuid } from '../shared/guards.ts';
import { isExpireReservationPayload } from '../shared/stock.ts';

export function makeExpireReservation(db: Knex): Task {
  return async (payload, helpers) => {
    if (!isExpireReservationPayload(payload) || !isUuid(payload.reservationId)) {
      helpers.logger.error('reservations__expire: malformed payload, skipped', { payload });
      return;
    }
    await releaseReservation(db, { id: payload.reservationId }, 'expired', { due: true });
  };
}

import { applyStock, releaseReservation, SHORTAGE_CONFLICT, toReservation } from '../../../db/stock.ts';
import { ConflictError, NotFoundError } from '../../../shared/errors.ts';
import { checkReferences } from '../../framework/references.ts';
import { readRoutes } from '../../framework/resource-routes.ts';
import { created, defineRoute, noContent } from '../../framework/route.ts';
import { findReservation, listReservations } from './queries.ts';
import { CreateReservation, Reservation, ReservationListQuery } from './schema.ts';

const tag = 'Reservations';

const reservations = readRoutes({
  path: '/reservations', tag, noun: 'reservation', record: Reservation, query: ReservationListQuery,
  list: listReservations, find: findReservation, toRecord: toReservation,
});

export const reservationRoutes = [
  reservations.list,
  defineRoute({
    method: 'post', path: '/reservations', operationId: 'createReservation', tag,
    summary: 'Hold stock',
    description: 'Reserves `quantity` of an item at a location by hand (a cart, a quote): it leaves `available` there and is '
      + 'counted in `reserved` until released (`DELETE`), or by itself at `expiresAt`. Records `reservation.created` with the level after.',
    body: CreateReservation,
    resolve: checkReferences([{ table: 'items', field: 'itemId', active: true }, { table: 'locations', field: 'locationId' }]),
    success: { status: 201, description: 'The reservation, open', schema: Reservation },
    errors: { 409: SHORTAGE_CONFLICT },
    handler: async ({ db, auth, body }) => {
      const { reserved: [reservation] } = await applyStock(db, { accountId: auth.accountId, userId: auth.userId, reserve: [{ ...body, source: { type: 'manual' } }] });
      return created(reservation);
    },
  }),
  reservations.get,
  defineRoute({
    method: 'delete', path: '/reservations/{id}', operationId: 'releaseReservation', tag,
    summary: 'Release a reservation',
    description: 'Releases an open reservation, manual or held for a sales order: its quantity is available again. '
      + 'Records `reservation.released` (reason `deleted`) with the level after.',
    success: { status: 204, description: 'Released' },
    errors: { 404: 'No such reservation in this account', 409: 'The reservation is not open (consumed or released already): the body names its `status`' },
    handler: async ({ db, auth, params }) => {
      const release = await releaseReservation(db, { id: params.id ?? '', accountId: auth.accountId, userId: auth.userId }, 'deleted');
      if (!release.released && !release.status) throw new NotFoundError('Reservation');
      if (!release.released) throw new ConflictError(`Cannot release a reservation that is ${release.status}`, { status: release.status });
      return noContent();
    },
  }),
];

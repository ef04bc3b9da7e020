import type { Knex } from 'knex';
import type { ReservationRow } from '../../../db/stock.ts';
import { findOwned, listOwned, whereId } from '../../framework/crud.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import type { ReservationListQuery } from './schema.ts';

export const findReservation = (db: Knex, accountId: string, id: string) =>
  findOwned<ReservationRow>(db, 'reservations', accountId, id);

export function listReservations(db: Knex, accountId: string, filters: ReservationListQuery, page: PageRequest): Promise<ReservationRow[]> {
  return listOwned<ReservationRow>(db, 'reservations', accountId, page, (query) => {
    whereId(query, 'item_id', filters.itemId);
    whereId(query, 'location_id', filters.locationId);
    whereId(query, 'sales_order_id', filters.salesOrderId);
    if (filters.status !== undefined) query.where('status', filters.status);
  });
}

// A fulfilment: some lines of an order, or parts of lines, shipped from one location. What the order reserved
// there for those lines is consumed first, the rest taken from what is available; a line then holds no more than
// it still needs, the excess released.
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { ApiKeyIdentity } from '../../../db/accounts.ts';
import { applyStock, lockReservations, type ClosingReservation, type ReservationRow } from '../../../db/stock.ts';
import { fromMicros, toMicros } from '../../../shared/decimal.ts';
import { completion, insertPartRecord, lineParts, type LinePart, type PartsSpec } from '../../framework/line-parts.ts';
import { FULFILLMENT_TABLES, type SalesOrderLineRow, type SalesOrderWithLines } from './queries.ts';
import type { CreateFulfillment } from './schema.ts';

export const FULFILLMENT_PARTS: PartsSpec<SalesOrderLineRow> = { field: 'lineItemId', verb: 'fulfil', done: (line) => line.quantity_fulfilled };

/**
 * The reservations a fulfilment closes: for each line, those at the fulfilment's location consumed up to what it
 * ships, then whatever the line would hold beyond what it still needs released (`completed`), elsewhere first.
 */
function reservationsToClose(held: ReservationRow[], order: SalesOrderWithLines, parts: Array<LinePart<SalesOrderLineRow>>, locationId: string): ClosingReservation[] {
  const shipped = new Map(parts.map((part) => [part.line.id, toMicros(part.quantity)]));
  return order.lines.flatMap((line) => {
    const rows = held.filter((row) => row.sales_order_line_id === line.id);
    // Here first for consuming, elsewhere first for releasing: what is left is reserved where it was.
    const here = rows.filter((row) => row.location_id === locationId);
    let toConsume = shipped.get(line.id) ?? 0n;
    const closing: ClosingReservation[] = [];
    const left = new Map(rows.map((row) => [row.id, toMicros(row.quantity)]));
    for (const row of here) {
      const take = toConsume < left.get(row.id)! ? toConsume : left.get(row.id)!;
      if (take <= 0n) break;
      closing.push({ row, quantity: fromMicros(take), as: 'consumed', reason: 'fulfilled' });
      left.set(row.id, left.get(row.id)! - take);
      toConsume -= take;
    }
    const needs = toMicros(line.quantity) - toMicros(line.quantity_fulfilled) - (shipped.get(line.id) ?? 0n);
    let excess = [...left.values()].reduce((sum, micros) => sum + micros, 0n) - needs;
    for (const row of [...rows.filter((row) => row.location_id !== locationId), ...here]) {
      const release = excess < left.get(row.id)! ? excess : left.get(row.id)!;
      if (release <= 0n) continue;
      closing.push({ row, quantity: fromMicros(release), as: 'released', reason: 'completed' });
      excess -= release;
    }
    return closing;
  });
}

/**
 * Ships `request` (its lines, or everything the order has left) from the locked order: the movements (whose source
 * is the fulfilment), the reservations, the fulfilment and its lines. Answers the fulfilment's id and whether the
 * order is now complete.
 */
export async function fulfil(
  trx: Knex.Transaction,
  auth: ApiKeyIdentity,
  order: SalesOrderWithLines,
  request: Pick<CreateFulfillment, 'locationId' | 'lines' | 'reference'>,
): Promise<{ id: string; complete: boolean }> {
  const parts = lineParts(order.lines, request.lines, FULFILLMENT_PARTS);
  const id = randomUUID();
  const held = await lockReservations(trx, auth.accountId, (query) => query.where('sales_order_id', order.id));
  await applyStock(trx, {
    accountId: auth.accountId, userId: auth.userId,
    move: {
      type: 'sales_fulfillment', reason: `Sales order ${order.sales_order_number}`, source: { type: 'sales_fulfillment', id },
      changes: parts.map((part) => ({ itemId: part.line.item_id, locationId: request.locationId, quantity: -part.quantity })),
    },
    close: reservationsToClose(held, order, parts, request.locationId),
  });
  await insertPartRecord(trx, auth.accountId, auth.userId, FULFILLMENT_TABLES, {
    id, orderId: order.id, locationId: request.locationId, reference: request.reference ?? null, parts,
  });
  return { id, complete: completion(order.lines, parts, FULFILLMENT_PARTS.done).complete };
}

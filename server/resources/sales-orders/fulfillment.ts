// A fulfilment: some lines of an order, or parts of lines, shipped from one location. What the order reserved
// there for those lines is consumed first, the rest taken from what is available; a line then holds no more than
// it still needs, the excess released.
import { randomUUID } from 'node:crypto';
import type { ClosingReservation, ReservationRow, StockOperation } from '../../../db/stock.ts';
import { fromMicros, toMicros } from '../../../shared/decimal.ts';
import { completion, lineParts, type LinePart, type NewPartRecord, type PartsSpec } from '../../framework/line-parts.ts';
import type { SalesOrderLineRow, SalesOrderWithLines, VersionedSalesOrder } from './queries.ts';
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
 * What shipping `request` (its lines, or everything the order has left) from the order as read does: the movements
 * (whose source is the fulfilment), the reservations it closes, the fulfilment with its lines; whether the order is
 * then complete.
 */
export function fulfilment(
  order: VersionedSalesOrder,
  request: Pick<CreateFulfillment, 'locationId' | 'lines' | 'reference'>,
): { stock: Pick<StockOperation, 'move' | 'close'>; record: NewPartRecord<SalesOrderLineRow>; complete: boolean } {
  const parts = lineParts(order.lines, request.lines, FULFILLMENT_PARTS);
  const id = randomUUID();
  return {
    stock: {
      move: {
        type: 'sales_fulfillment', reason: `Sales order ${order.sales_order_number}`, source: { type: 'sales_fulfillment', id },
        changes: parts.map((part) => ({ itemId: part.line.item_id, locationId: request.locationId, quantity: -part.quantity })),
      },
      close: reservationsToClose(order.reservations, order, parts, request.locationId),
    },
    record: { id, orderId: order.id, locationId: request.locationId, reference: request.reference ?? null, parts },
    complete: completion(order.lines, parts, FULFILLMENT_PARTS.done).complete,
  };
}

import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { ApiKeyIdentity } from '../../../db/accounts.ts';
import { recordEvent } from '../../../db/events.ts';
import { ORDER_TOTAL_TOO_LARGE, orderTotal } from '../../../shared/decimal.ts';
import { lockOwned } from '../../framework/crud.ts';
import { NotFoundError, ValidationError } from '../../../shared/errors.ts';
import { checkReferences } from '../../framework/references.ts';
import { readRoutes } from '../../framework/resource-routes.ts';
import { created, defineRoute, ok } from '../../framework/route.ts';
import { describeOperation, nextState } from '../../framework/transitions.ts';
import { applyStock, changeStock, lockReservations, SHORTAGE_CONFLICT, type NewReservation } from '../../../db/stock.ts';
import { fromMicros, toMicros } from '../../../shared/decimal.ts';
import { SALES_ORDER_EVENTS, SALES_ORDER_TRANSITIONS, type SalesOrderOperation } from './lifecycle.ts';
import { orderLines, resolveSalesOrder, type OrderItems } from './lines.ts';
import {
  findSalesOrder, insertLines, insertOrder, listSalesOrders, setStatus, toSalesOrder, withLines, type SalesOrderRow, type SalesOrderWithLines,
} from './queries.ts';
import { CreateSalesOrder, FulfillSalesOrder, ReserveSalesOrder, SalesOrder, SalesOrderListQuery } from './schema.ts';

const tag = 'Sales orders';
const illegalMove = 'The order is not in a status this operation applies to; the body names its `status` and the `operation`.';

/** What each line has not reserved yet, reserved at `locationId`. */
function unreserved(order: Pick<SalesOrderWithLines, 'id' | 'lines'>, locationId: string): NewReservation[] {
  return order.lines.flatMap((line) => {
    const remainder = toMicros(line.quantity) - toMicros(line.quantity_reserved);
    return remainder > 0n
      ? [{ itemId: line.item_id, locationId, quantity: fromMicros(remainder), source: { type: 'sales_order' as const, id: order.id, lineItemId: line.id } }]
      : [];
  });
}

const create = defineRoute<Record<string, never>, CreateSalesOrder, OrderItems>({
  method: 'post', path: '/sales-orders', operationId: 'createSalesOrder', tag,
  summary: 'Create a sales order',
  description: 'Send either shape: A, lines by `itemId` taking each item\'s `price`, or B, lines by `sku` with explicit prices. '
    + 'Both answer the same order. `customerId` and at least one line are required; `salesOrderNumber` is assigned '
    + '(`SO-000001`, ...) when absent. A 400 names every problem at once, shape and references (unknown customer, item '
    + 'or sku, archived item, item without a price) together. `salesOrderNumber` and `integrationSourceId` are unique in '
    + 'your account: sending either again is a 409 carrying the existing order\'s `existingId`, so a retry can find it. '
    + 'With `locationId`, every line is reserved there in the same transaction (all or nothing), so that no other order can take the '
    + 'stock. Records a `sales_order.created` event.',
  body: CreateSalesOrder,
  success: { status: 201, description: 'The created sales order, status `open`', schema: SalesOrder },
  errors: {
    409: 'A sales order with this `salesOrderNumber` or `integrationSourceId` already exists: the body names it and carries its `existingId`. '
      + `Or, with \`locationId\`, a line is short there: ${SHORTAGE_CONFLICT}`,
  },
  resolve: ({ db, auth, body }) => resolveSalesOrder(db, auth.accountId, body),
  handler: async ({ db, auth, body, resolved }) => {
    const lines = orderLines(body, resolved);
    const total = orderTotal(lines);
    if (total === undefined) throw ValidationError.of('lineItems' in body ? 'lineItems' : 'items', ORDER_TOTAL_TOO_LARGE);
    return created(await db.transaction(async (trx) => {
      const id = randomUUID();
      const lineRows = await insertLines(trx, auth.accountId, id, lines);
      const reserving = body.locationId
        ? await applyStock(trx, { accountId: auth.accountId, userId: auth.userId, reserve: unreserved({ id, lines: lineRows }, body.locationId) })
        : undefined;
      return toSalesOrder(await insertOrder(trx, auth.accountId, id, {
        customerId: body.customerId, salesOrderNumber: body.salesOrderNumber, integrationSourceId: body.integrationSourceId, total,
      }, reserving ? lineRows.map((line) => ({ ...line, quantity_reserved: line.quantity })) : lineRows, reserving));
    }));
  },
});

/**
 * Locks the order (a second operation on it waits, then sees the first one's status), checks the move against the
 * life cycle, applies `effect`, sets the new status and records the operation's event.
 */
async function transition(
  trx: Knex.Transaction,
  auth: ApiKeyIdentity,
  id: string,
  operation: SalesOrderOperation,
  effect: (order: SalesOrderWithLines) => Promise<Partial<Pick<SalesOrderRow, 'fulfilled_location_id'>>> = async () => ({}),
) {
  const locked = await lockOwned<SalesOrderRow>(trx, 'sales_orders', auth.accountId, id);
  if (!locked) throw new NotFoundError('Sales order');
  const status = nextState(SALES_ORDER_TRANSITIONS, 'sales order', locked.status, operation);
  const [order] = await withLines(trx, auth.accountId, [locked]);
  const changed = toSalesOrder(await setStatus(trx, order!, status, await effect(order!)));
  const event = SALES_ORDER_EVENTS[operation];
  if (event) await recordEvent(trx, auth.accountId, { type: event, data: changed });
  return changed;
}

const fulfill = defineRoute({
  method: 'post', path: '/sales-orders/{id}/fulfill', operationId: 'fulfillSalesOrder', tag,
  summary: 'Fulfil a sales order',
  description: `${describeOperation(SALES_ORDER_TRANSITIONS, 'fulfill')} Takes every line out of stock at \`locationId\` (stock movements `
    + 'of type `sales_fulfillment` whose source is the order, each with its `stock.adjusted` event), all lines or none. What the '
    + 'order reserved there is taken first (its reservations are consumed: `reservation.released`, reason `fulfilled`); the rest '
    + 'must be available (not reserved for anything else); what the order still holds elsewhere is released (reason `completed`). '
    + 'If any line is short it is a 409 whose `shortages` names each and nothing changes. Records a `sales_order.fulfilled` event.',
  body: FulfillSalesOrder,
  resolve: checkReferences([{ table: 'locations', field: 'locationId' }]),
  success: { status: 200, description: 'The fulfilled sales order', schema: SalesOrder },
  errors: { 404: 'No such sales order in this account', 409: `${illegalMove} Or a line is short: ${SHORTAGE_CONFLICT}` },
  handler: async ({ db, auth, params, body }) => ok(await db.transaction((trx) => transition(trx, auth, params.id ?? '', 'fulfill', async (order) => {
    const held = await lockReservations(trx, auth.accountId, (query) => query.where('sales_order_id', order.id));
    await changeStock(trx, {
      accountId: auth.accountId, userId: auth.userId,
      move: {
        type: 'sales_fulfillment', reason: `Sales order ${order.sales_order_number}`, source: { type: 'sales_order', id: order.id },
        changes: order.lines.map((line) => ({ itemId: line.item_id, locationId: body.locationId, quantity: -line.quantity })),
      },
      close: held.map((row) => (row.location_id === body.locationId
        ? { row, quantity: row.quantity, as: 'consumed', reason: 'fulfilled' }
        : { row, quantity: row.quantity, as: 'released', reason: 'completed' })),
    });
    return { fulfilled_location_id: body.locationId };
  }))),
});

const cancel = defineRoute({
  method: 'post', path: '/sales-orders/{id}/cancel', operationId: 'cancelSalesOrder', tag,
  summary: 'Cancel a sales order',
  description: `${describeOperation(SALES_ORDER_TRANSITIONS, 'cancel')} Takes no body. What the order reserved is released `
    + '(`reservation.released`, reason `cancelled`). Records a `sales_order.cancelled` event.',
  success: { status: 200, description: 'The cancelled sales order', schema: SalesOrder },
  errors: { 404: 'No such sales order in this account', 409: illegalMove },
  handler: async ({ db, auth, params }) => ok(await db.transaction((trx) => transition(trx, auth, params.id ?? '', 'cancel', async (order) => {
    const held = await lockReservations(trx, auth.accountId, (query) => query.where('sales_order_id', order.id));
    await changeStock(trx, {
      accountId: auth.accountId, userId: auth.userId,
      close: held.map((row) => ({ row, quantity: row.quantity, as: 'released', reason: 'cancelled' })),
    });
    return {};
  }))),
});

const reserve = defineRoute({
  method: 'post', path: '/sales-orders/{id}/reserve', operationId: 'reserveSalesOrder', tag,
  summary: 'Reserve a sales order',
  description: `${describeOperation(SALES_ORDER_TRANSITIONS, 'reserve')} Reserves at \`locationId\` what each line has not reserved yet, `
    + 'all lines or none (`reservation.created` for each); a line already reserved in full is left as it is.',
  body: ReserveSalesOrder,
  resolve: checkReferences([{ table: 'locations', field: 'locationId' }]),
  success: { status: 200, description: 'The order, each line with what it holds (`quantityReserved`)', schema: SalesOrder },
  errors: { 404: 'No such sales order in this account', 409: `${illegalMove} Or a line is short there: ${SHORTAGE_CONFLICT}` },
  handler: async ({ db, auth, params, body }) => ok(await db.transaction((trx) => transition(trx, auth, params.id ?? '', 'reserve', async (order) => {
    await changeStock(trx, { accountId: auth.accountId, userId: auth.userId, reserve: unreserved(order, body.locationId) });
    return {};
  }))),
});

const salesOrders = readRoutes({
  path: '/sales-orders', tag, noun: 'sales order', record: SalesOrder, query: SalesOrderListQuery,
  list: listSalesOrders, find: findSalesOrder, toRecord: toSalesOrder,
  listDescription: 'Each order with its lines.',
});

export const salesOrderRoutes = [salesOrders.list, create, salesOrders.get, fulfill, cancel, reserve];

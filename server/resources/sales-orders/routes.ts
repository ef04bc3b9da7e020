import type { Knex } from 'knex';
import type { ApiKeyIdentity } from '../../../db/accounts.ts';
import { recordEvent } from '../../../db/events.ts';
import { ORDER_TOTAL_TOO_LARGE, orderTotal } from '../../../shared/decimal.ts';
import { lockOwned } from '../../framework/crud.ts';
import { NotFoundError, ValidationError } from '../../framework/errors.ts';
import { checkReferences } from '../../framework/references.ts';
import { readRoutes } from '../../framework/resource-routes.ts';
import { created, defineRoute, ok } from '../../framework/route.ts';
import { describeOperation, nextState } from '../../framework/transitions.ts';
import { moveStock } from '../stock/ledger.ts';
import { SALES_ORDER_EVENTS, SALES_ORDER_TRANSITIONS, type SalesOrderOperation } from './lifecycle.ts';
import { orderLines, resolveSalesOrder, type OrderItems } from './lines.ts';
import {
  findSalesOrder, insertSalesOrder, listSalesOrders, setStatus, toSalesOrder, withLines, type SalesOrderRow, type SalesOrderWithLines,
} from './queries.ts';
import { CreateSalesOrder, FulfillSalesOrder, SalesOrder, SalesOrderListQuery } from './schema.ts';

const tag = 'Sales orders';
const illegalMove = 'The order is not in a status this operation applies to; the body names its `status` and the `operation`.';

const create = defineRoute<Record<string, never>, CreateSalesOrder, OrderItems>({
  method: 'post', path: '/sales-orders', operationId: 'createSalesOrder', tag,
  summary: 'Create a sales order',
  description: 'Send either shape: A, lines by `itemId` taking each item\'s `price`, or B, lines by `sku` with explicit prices. '
    + 'Both answer the same order. `customerId` and at least one line are required; `salesOrderNumber` is assigned '
    + '(`SO-000001`, ...) when absent. A 400 names every problem at once, shape and references (unknown customer, item '
    + 'or sku, archived item, item without a price) together. `salesOrderNumber` and `integrationSourceId` are unique in '
    + 'your account: sending either again is a 409 carrying the existing order\'s `existingId`, so a retry can find it. '
    + 'Records a `sales_order.created` event.',
  body: CreateSalesOrder,
  success: { status: 201, description: 'The created sales order, status `open`', schema: SalesOrder },
  errors: { 409: 'A sales order with this `salesOrderNumber` or `integrationSourceId` already exists: the body names it and carries its `existingId`' },
  resolve: ({ db, auth, body }) => resolveSalesOrder(db, auth.accountId, body),
  handler: async ({ db, auth, body, resolved }) => {
    const lines = orderLines(body, resolved);
    const total = orderTotal(lines);
    if (total === undefined) throw ValidationError.of('lineItems' in body ? 'lineItems' : 'items', ORDER_TOTAL_TOO_LARGE);
    return created(await db.transaction(async (trx) => {
      const order = toSalesOrder(await insertSalesOrder(trx, auth.accountId, {
        customerId: body.customerId, salesOrderNumber: body.salesOrderNumber, integrationSourceId: body.integrationSourceId, total,
      }, lines));
      await recordEvent(trx, auth.accountId, { type: 'sales_order.created', data: order });
      return order;
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
  await recordEvent(trx, auth.accountId, { type: SALES_ORDER_EVENTS[operation], data: changed });
  return changed;
}

const fulfill = defineRoute({
  method: 'post', path: '/sales-orders/{id}/fulfill', operationId: 'fulfillSalesOrder', tag,
  summary: 'Fulfil a sales order',
  description: `${describeOperation(SALES_ORDER_TRANSITIONS, 'fulfill')} Takes every line out of stock at \`locationId\` (stock movements `
    + 'of type `sales_fulfillment` whose source is the order, each with its `stock.adjusted` event), all lines or none: if '
    + 'any line is short it is a 409 whose `shortages` names each (`itemId`, `available`, `requested`) and nothing changes. '
    + 'Records a `sales_order.fulfilled` event.',
  body: FulfillSalesOrder,
  resolve: checkReferences([{ table: 'locations', field: 'locationId' }]),
  success: { status: 200, description: 'The fulfilled sales order', schema: SalesOrder },
  errors: { 404: 'No such sales order in this account', 409: `${illegalMove} Or stock would go below zero: \`shortages\` lists every short line.` },
  handler: async ({ db, auth, params, body }) => ok(await db.transaction((trx) => transition(trx, auth, params.id ?? '', 'fulfill', async (order) => {
    await moveStock(trx, {
      accountId: auth.accountId, userId: auth.userId, type: 'sales_fulfillment', reason: `Sales order ${order.sales_order_number}`,
      source: { type: 'sales_order', id: order.id },
      changes: order.lines.map((line) => ({ itemId: line.item_id, locationId: body.locationId, quantity: -line.quantity })),
    });
    return { fulfilled_location_id: body.locationId };
  }))),
});

const cancel = defineRoute({
  method: 'post', path: '/sales-orders/{id}/cancel', operationId: 'cancelSalesOrder', tag,
  summary: 'Cancel a sales order',
  description: `${describeOperation(SALES_ORDER_TRANSITIONS, 'cancel')} Takes no body. Records a \`sales_order.cancelled\` event.`,
  success: { status: 200, description: 'The cancelled sales order', schema: SalesOrder },
  errors: { 404: 'No such sales order in this account', 409: illegalMove },
  handler: async ({ db, auth, params }) => ok(await db.transaction((trx) => transition(trx, auth, params.id ?? '', 'cancel'))),
});

const salesOrders = readRoutes({
  path: '/sales-orders', tag, noun: 'sales order', record: SalesOrder, query: SalesOrderListQuery,
  list: listSalesOrders, find: findSalesOrder, toRecord: toSalesOrder,
  listDescription: 'Each order with its lines.',
});

export const salesOrderRoutes = [salesOrders.list, create, salesOrders.get, fulfill, cancel];

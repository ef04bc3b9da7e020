import { recordEvent } from '../../../db/events.ts';
import { lockOwned } from '../../framework/crud.ts';
import { NotFoundError } from '../../framework/errors.ts';
import { requireReferences } from '../../framework/references.ts';
import { getRoute, listRoute } from '../../framework/resource-routes.ts';
import { created, defineRoute, ok } from '../../framework/route.ts';
import { describeOperation, nextState, type TransitionTable } from '../../framework/transitions.ts';
import { moveStock } from '../stock/ledger.ts';
import { ORDER_TOTAL_TOO_LARGE, orderTotal } from '../../../shared/decimal.ts';
import { ValidationError } from '../../framework/errors.ts';
import { orderLines, resolveSalesOrder, type OrderItems } from './lines.ts';
import { findSalesOrder, insertSalesOrder, listSalesOrders, setStatus, toSalesOrder, withLines, type SalesOrderRow } from './queries.ts';
import { CreateSalesOrder, FulfillSalesOrder, SalesOrder, SalesOrderListQuery, type SalesOrderStatus } from './schema.ts';

const tag = 'Sales orders';

type Operation = 'fulfill' | 'cancel';

const TRANSITIONS: TransitionTable<SalesOrderStatus, Operation> = {
  open: { fulfill: 'fulfilled', cancel: 'cancelled' },
  fulfilled: {},
  cancelled: {},
};

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

const fulfill = defineRoute({
  method: 'post', path: '/sales-orders/{id}/fulfill', operationId: 'fulfillSalesOrder', tag,
  summary: 'Fulfil a sales order',
  description: `${describeOperation(TRANSITIONS, 'fulfill')} Takes every line out of stock at \`locationId\` (stock movements `
    + 'of type `sales_fulfillment` whose source is the order, each with its `stock.adjusted` event), all lines or none: if '
    + 'any line is short it is a 409 whose `shortages` names each (`itemId`, `available`, `requested`) and nothing changes. '
    + 'Records a `sales_order.fulfilled` event.',
  body: FulfillSalesOrder,
  success: { status: 200, description: 'The fulfilled sales order', schema: SalesOrder },
  errors: { 404: 'No such sales order in this account', 409: `${illegalMove} Or stock would go below zero: \`shortages\` lists every short line.` },
  handler: async ({ db, auth, params, body }) => ok(await db.transaction(async (trx) => {
    const locked = await lockOwned<SalesOrderRow>(trx, 'sales_orders', auth.accountId, params.id ?? '');
    if (!locked) throw new NotFoundError('Sales order');
    await requireReferences(trx, auth.accountId, [{ table: 'locations', id: body.locationId, path: 'locationId' }]);
    const status = nextState(TRANSITIONS, 'sales order', locked.status, 'fulfill');
    const [order] = await withLines(trx, auth.accountId, [locked]);
    await moveStock(trx, {
      accountId: auth.accountId, userId: auth.userId, type: 'sales_fulfillment', reason: `Sales order ${locked.sales_order_number}`,
      source: { type: 'sales_order', id: locked.id },
      changes: order!.lines.map((line) => ({ itemId: line.item_id, locationId: body.locationId, quantity: -line.quantity })),
    });
    const fulfilled = toSalesOrder(await setStatus(trx, order!, status, { fulfilled_location_id: body.locationId }));
    await recordEvent(trx, auth.accountId, { type: 'sales_order.fulfilled', data: fulfilled });
    return fulfilled;
  })),
});

const cancel = defineRoute({
  method: 'post', path: '/sales-orders/{id}/cancel', operationId: 'cancelSalesOrder', tag,
  summary: 'Cancel a sales order',
  description: `${describeOperation(TRANSITIONS, 'cancel')} Takes no body. Records a \`sales_order.cancelled\` event.`,
  success: { status: 200, description: 'The cancelled sales order', schema: SalesOrder },
  errors: { 404: 'No such sales order in this account', 409: illegalMove },
  handler: async ({ db, auth, params }) => ok(await db.transaction(async (trx) => {
    const locked = await lockOwned<SalesOrderRow>(trx, 'sales_orders', auth.accountId, params.id ?? '');
    if (!locked) throw new NotFoundError('Sales order');
    const status = nextState(TRANSITIONS, 'sales order', locked.status, 'cancel');
    const [order] = await withLines(trx, auth.accountId, [locked]);
    const cancelled = toSalesOrder(await setStatus(trx, order!, status));
    await recordEvent(trx, auth.accountId, { type: 'sales_order.cancelled', data: cancelled });
    return cancelled;
  })),
});

export const salesOrderRoutes = [
  listRoute({
    path: '/sales-orders', operationId: 'listSalesOrders', tag, summary: 'List sales orders',
    description: 'Each order with its lines.',
    name: 'SalesOrder', record: SalesOrder, query: SalesOrderListQuery, list: listSalesOrders, toRecord: toSalesOrder,
  }),
  create,
  getRoute({
    path: '/sales-orders/{id}', operationId: 'getSalesOrder', tag, summary: 'Get a sales order',
    name: 'Sales order', record: SalesOrder, find: findSalesOrder, toRecord: toSalesOrder,
  }),
  fulfill,
  cancel,
];

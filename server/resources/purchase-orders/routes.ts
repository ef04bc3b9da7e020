import { recordEvent } from '../../../db/events.ts';
import { lockOwned } from '../../framework/crud.ts';
import { NotFoundError } from '../../../shared/errors.ts';
import { readRoutes } from '../../framework/resource-routes.ts';
import { checkReferences } from '../../framework/references.ts';
import { created, defineRoute, ok } from '../../framework/route.ts';
import { describeOperation, nextState } from '../../framework/transitions.ts';
import { changeStock, OVERFLOW_CONFLICT } from '../../../db/stock.ts';
import {
  EXPECTED_STATUSES, PURCHASE_ORDER_EVENTS, PURCHASE_ORDER_OPERATIONS, PURCHASE_ORDER_TRANSITIONS, type PurchaseOrderOperation,
} from './lifecycle.ts';
import {
  findPurchaseOrder, insertPurchaseOrder, listPurchaseOrders, setPurchaseOrderStatus, toPurchaseOrder, type PurchaseOrderRow,
} from './queries.ts';
import { CreatePurchaseOrder, PurchaseOrder, PurchaseOrderListQuery, PurchaseOrderTransition } from './schema.ts';

const tag = 'Purchase orders';

const SUMMARIES: Record<PurchaseOrderOperation, string> = {
  confirm: 'Confirm a purchase order',
  hold: 'Put a purchase order on hold',
  close: 'Close a purchase order, receiving its goods',
  cancel: 'Cancel a purchase order',
};

const EFFECTS: Partial<Record<PurchaseOrderOperation, string>> = {
  close: 'Receives every line\'s quantity into the order\'s location (stock movements of type `purchase_receipt` whose source is the order, '
    + 'each with its `stock.adjusted` event) in the same transaction as the change of status. ',
};
const INCOMING = 'While an order is confirmed or on hold, its lines count in `incoming` at its location. ';

const transitionRoutes = PURCHASE_ORDER_OPERATIONS.map((operation) => defineRoute({
  method: 'post', path: `/purchase-orders/{id}/${operation}`, operationId: `${operation}PurchaseOrder`, tag,
  summary: SUMMARIES[operation],
  description: `${EFFECTS[operation] ?? ''}${INCOMING}Takes no body (or \`{}\`). ${describeOperation(PURCHASE_ORDER_TRANSITIONS, operation)} `
    + `Records a \`${PURCHASE_ORDER_EVENTS[operation]}\` event.`,
  body: PurchaseOrderTransition,
  success: { status: 200, description: 'The order in its new status', schema: PurchaseOrder },
  errors: {
    404: 'No such purchase order in this account',
    409: `Not allowed from the order's current status: the body names \`status\` and \`operation\`. ${describeOperation(PURCHASE_ORDER_TRANSITIONS, operation)}`
      + (operation === 'close' ? ` ${OVERFLOW_CONFLICT}` : ''),
  },
  handler: async ({ db, auth, params }) => ok(await db.transaction(async (trx) => {
    // Locked first: a second transition of this order waits here, then sees the first one's status.
    const row = await lockOwned<PurchaseOrderRow>(trx, 'purchase_orders', auth.accountId, params.id ?? '');
    if (!row) throw new NotFoundError('Purchase order');
    const order = await setPurchaseOrderStatus(trx, row, nextState(PURCHASE_ORDER_TRANSITIONS, 'purchase order', row.status, operation));
    // +1 when the order becomes expected, -1 when it stops being (received, closed or cancelled), 0 otherwise.
    const expected = Number(EXPECTED_STATUSES.has(order.status)) - Number(EXPECTED_STATUSES.has(row.status));
    const lineAt = (line: (typeof order.lines)[number], quantity: number) => ({ itemId: line.item_id, locationId: order.location_id, quantity });
    await changeStock(trx, {
      accountId: auth.accountId, userId: auth.userId,
      move: operation === 'close'
        ? { type: 'purchase_receipt', reason: 'Purchase order receipt', source: { type: 'purchase_order', id: order.id }, changes: order.lines.map((line) => lineAt(line, line.quantity)) }
        : undefined,
      expect: order.lines.map((line) => lineAt(line, expected * line.quantity)).filter((change) => change.quantity !== 0),
    });
    const record = toPurchaseOrder(order);
    await recordEvent(trx, auth.accountId, { type: PURCHASE_ORDER_EVENTS[operation], data: record });
    return record;
  })),
}));

const purchaseOrders = readRoutes({
  path: '/purchase-orders', tag, noun: 'purchase order', record: PurchaseOrder, query: PurchaseOrderListQuery,
  list: listPurchaseOrders, find: findPurchaseOrder, toRecord: toPurchaseOrder,
  listDescription: 'Each order with its lines.',
});

export const purchaseOrderRoutes = [
  defineRoute({
    method: 'post', path: '/purchase-orders', operationId: 'createPurchaseOrder', tag,
    summary: 'Create a purchase order',
    description: 'Creates the order in `draft` with its lines and their exact `total`. Items must be of your account and not archived. '
      + 'Records a `purchase_order.created` event.',
    body: CreatePurchaseOrder,
    resolve: checkReferences([
      { table: 'locations', field: 'locationId' },
      { table: 'items', field: 'lines[].itemId', active: true },
    ]),
    success: { status: 201, description: 'The created order, in `draft`', schema: PurchaseOrder },
    handler: async ({ db, auth, body }) => created(await db.transaction(async (trx) => {
      const record = toPurchaseOrder(await insertPurchaseOrder(trx, auth.accountId, auth.userId, body));
      await recordEvent(trx, auth.accountId, { type: 'purchase_order.created', data: record });
      return record;
    })),
  }),

  purchaseOrders.list,
  purchaseOrders.get,

  ...transitionRoutes,
];

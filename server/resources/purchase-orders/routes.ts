import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { ApiKeyIdentity } from '../../../db/accounts.ts';
import { recordEvent } from '../../../db/events.ts';
import { OVERFLOW_CONFLICT, type StockOperation } from '../../../db/stock.ts';
import { fromMicros, toMicros } from '../../../shared/decimal.ts';
import { checkOrderLines, completion, lineParts, linesAfter, storedPartRecord, type PartsSpec } from '../../framework/line-parts.ts';
import { writeOrder, type OrderWrite } from '../../framework/order-writes.ts';
import { checkReferences } from '../../framework/references.ts';
import { childListRoute, readRoutes } from '../../framework/resource-routes.ts';
import { created, defineRoute, ok } from '../../framework/route.ts';
import { allowedMove, describeOperation, eventOf, settle } from '../../framework/transitions.ts';
import {
  EXPECTED_STATUSES, PURCHASE_ORDER_EVENTS, PURCHASE_ORDER_FACTS, PURCHASE_ORDER_TRANSITIONS, type PurchaseOrderOperation,
  type PurchaseOrderStatus,
} from './lifecycle.ts';
import {
  findPurchaseOrder, insertPurchaseOrder, listPurchaseOrders, listReceipts, PURCHASE_ORDERS, RECEIPT_TABLES, toPurchaseOrder, toReceipt,
  type PurchaseOrderLineRow, type ReceiptRow, type VersionedPurchaseOrder,
} from './queries.ts';
import {
  ClosePurchaseOrder, CreatePurchaseOrder, CreateReceipt, PurchaseOrder, PurchaseOrderListQuery, PurchaseOrderTransition, PurchaseReceipt,
  PurchaseReceiptResult, type PurchaseOrder as PurchaseOrderRecord,
} from './schema.ts';

const tag = 'Purchase orders';
const describeMove = (operation: PurchaseOrderOperation) => describeOperation(PURCHASE_ORDER_TRANSITIONS, operation, PURCHASE_ORDER_FACTS);
const illegalMove = (operation: PurchaseOrderOperation) =>
  `Not allowed from the order's current status: the body names \`status\` and \`operation\`. ${describeMove(operation)}`;

const RECEIPT_PARTS: PartsSpec<PurchaseOrderLineRow> = { field: 'lineId', verb: 'receive', done: (line) => line.quantity_received };

/** What a line still brings to `incoming` while its order is in `status`. */
const expectedOf = (line: PurchaseOrderLineRow, status: PurchaseOrderStatus, received: bigint): bigint =>
  (EXPECTED_STATUSES.has(status) ? toMicros(line.quantity) - received : 0n);

/** What a transition receives: the parts asked for (`lines`), or absent lines everything outstanding. */
type Receiving = Pick<NonNullable<CreateReceipt>, 'lines' | 'reference'>;

/**
 * What `operation` does to the order as read: checks the move against the life cycle, receives what `receiving` asks
 * for as one receipt, sets the status the move ends in, and moves `incoming` by what the lines stop (or start)
 * bringing; with the order as it will then stand.
 */
function plan(auth: ApiKeyIdentity, order: VersionedPurchaseOrder, operation: PurchaseOrderOperation, receiving?: Receiving): { stock: StockOperation; write: OrderWrite; receiptId?: string } {
  const move = allowedMove(PURCHASE_ORDER_TRANSITIONS, 'purchase order', order.status, operation);
  const { lines } = order;
  const parts = receiving ? lineParts(lines, receiving.lines, RECEIPT_PARTS) : [];
  const { complete, started } = completion(lines, parts, RECEIPT_PARTS.done);
  const status = settle(move, { complete, received: started });

  const receipt = parts.length
    ? { id: randomUUID(), orderId: order.id, locationId: order.location_id, reference: receiving?.reference ?? null, parts }
    : undefined;
  const after = new Map(linesAfter(lines, parts, RECEIPT_TABLES).map((line) => [line.id, line]));
  const received = (line: PurchaseOrderLineRow) => toMicros(after.get(line.id)!.quantity_received);
  const at = (line: PurchaseOrderLineRow, quantity: bigint) => ({ itemId: line.item_id, locationId: order.location_id, quantity: fromMicros(quantity) });
  const now = randomUUID();
  const record = toPurchaseOrder({
    ...order, status, updated_at: now, lines: [...after.values()],
    receipts: receipt ? [...order.receipts, storedPartRecord<PurchaseOrderLineRow, ReceiptRow>(RECEIPT_TABLES, auth, receipt, now)] : order.receipts,
  });
  return {
    stock: {
      accountId: auth.accountId, userId: auth.userId,
      move: receipt
        ? { type: 'purchase_receipt', reason: 'Purchase order receipt', source: { type: 'purchase_receipt', id: receipt.id }, changes: parts.map((part) => at(part.line, toMicros(part.quantity))) }
        : undefined,
      expect: lines
        .map((line) => at(line, expectedOf(line, status, received(line)) - expectedOf(line, order.status, toMicros(line.quantity_received))))
        .filter((change) => change.quantity !== 0),
    },
    write: {
      set: (q) => ({ status: q.param(status, 'text'), closed_at: status === 'closed' ? 'now()' : 'o.closed_at' }),
      part: receipt && { tables: RECEIPT_TABLES, record: receipt }, record, now, event: eventOf(PURCHASE_ORDER_EVENTS, operation, status),
    },
    receiptId: receipt?.id,
  };
}

/** Runs `operation` on the order (see writeOrder). Answers the order and the receipt's id. */
async function transition(db: Knex, auth: ApiKeyIdentity, id: string, operation: PurchaseOrderOperation, receiving?: Receiving) {
  const { record, plan: planned } = await writeOrder<VersionedPurchaseOrder, ReturnType<typeof plan>, PurchaseOrderRecord>(
    db, PURCHASE_ORDERS, () => findPurchaseOrder(db, auth.accountId, id), (order) => plan(auth, order, operation, receiving));
  return { order: record, receiptId: planned.receiptId };
}

const RECEIVING = 'Stock movements of type `purchase_receipt` at the order\'s location whose `source` is the receipt, each with its '
  + '`stock.adjusted` event; `incoming` there falls by as much.';
const INCOMING = 'While an order is confirmed, partially received or on hold, what its lines have outstanding counts in `incoming` at its location. ';

const SUMMARIES: Record<'confirm' | 'hold' | 'cancel', string> = {
  confirm: 'Confirm a purchase order',
  hold: 'Put a purchase order on hold',
  cancel: 'Cancel a purchase order',
};

const plainTransitions = (['confirm', 'hold', 'cancel'] as const).map((operation) => defineRoute({
  method: 'post', path: `/purchase-orders/{id}/${operation}`, operationId: `${operation}PurchaseOrder`, tag,
  summary: SUMMARIES[operation],
  description: `${INCOMING}${operation === 'cancel' ? 'What was received stays received. ' : ''}Takes no body (or \`{}\`). `
    + `${describeMove(operation)} Records a \`${PURCHASE_ORDER_EVENTS[operation]}\` event.`,
  body: PurchaseOrderTransition,
  success: { status: 200, description: 'The order in its new status', schema: PurchaseOrder },
  errors: { 404: 'No such purchase order in this account', 409: illegalMove(operation) },
  handler: async ({ db, auth, params }) => ok((await transition(db, auth, params.id ?? '', operation)).order),
}));

const close = defineRoute({
  method: 'post', path: '/purchase-orders/{id}/close', operationId: 'closePurchaseOrder', tag,
  summary: 'Close a purchase order, receiving what is outstanding',
  description: `Receives what every line still has outstanding into the order's location as one receipt (${RECEIVING}), then closes `
    + 'the order, in one transaction. With `{"receiveOutstanding": false}` it closes short: nothing more is received and what was '
    + `outstanding leaves \`incoming\`. ${describeMove('close')} Records a \`purchase_order.closed\` event.`,
  body: ClosePurchaseOrder,
  success: { status: 200, description: 'The closed order', schema: PurchaseOrder },
  errors: { 404: 'No such purchase order in this account', 409: `${illegalMove('close')} ${OVERFLOW_CONFLICT}` },
  handler: async ({ db, auth, params, body }) =>
    ok((await transition(db, auth, params.id ?? '', 'close', body?.receiveOutstanding === false ? undefined : {})).order),
});

const receive = defineRoute({
  method: 'post', path: '/purchase-orders/{id}/receipts', operationId: 'createPurchaseReceipt', tag,
  summary: 'Receive some of a purchase order',
  description: `Receives \`lines\` (each an order line and a quantity, at most what it has outstanding), or without \`lines\` everything `
    + `outstanding, into the order's location. ${RECEIVING} It may be repeated until every line is complete. ${describeMove('receive')} `
    + 'All lines or none. Records `purchase_order.partially_received`, or `purchase_order.closed` when the order is complete.',
  body: CreateReceipt,
  resolve: checkOrderLines(RECEIPT_TABLES),
  success: { status: 201, description: 'The receipt, with the order as it stands after it (`purchaseOrder`)', schema: PurchaseReceiptResult },
  errors: {
    404: 'No such purchase order in this account',
    409: `${illegalMove('receive')} Or a line is asked for more than it has outstanding: \`remainders\` names each (\`lineId\`, \`itemId\`, `
      + `\`requested\`, \`remaining\`). ${OVERFLOW_CONFLICT}`,
  },
  handler: async ({ db, auth, params, body }) => {
    const { order, receiptId } = await transition(db, auth, params.id ?? '', 'receive', body ?? {});
    return created({ ...order.receipts.find((receipt) => receipt.id === receiptId)!, purchaseOrder: order });
  },
});

const purchaseOrders = readRoutes({
  path: '/purchase-orders', tag, noun: 'purchase order', record: PurchaseOrder, query: PurchaseOrderListQuery,
  list: listPurchaseOrders, find: findPurchaseOrder, toRecord: toPurchaseOrder,
  listDescription: 'Each order with its lines and receipts.',
});

const receipts = childListRoute({
  path: '/purchase-orders/{id}/receipts', tag, noun: 'receipt', record: PurchaseReceipt, toRecord: toReceipt,
  parent: { table: 'purchase_orders', noun: 'purchase order' }, list: listReceipts,
  description: 'What was received on the order, oldest first, a page at a time (the order embeds them all as `receipts` too).',
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

  ...plainTransitions,
  close,
  receive,
  receipts,
];

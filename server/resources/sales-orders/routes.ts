import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import type { ApiKeyIdentity } from '../../../db/accounts.ts';
import { ORDER_TOTAL_TOO_LARGE, orderTotal } from '../../../shared/decimal.ts';
import { ValidationError } from '../../../shared/errors.ts';
import { checkAll, checkReferences } from '../../framework/references.ts';
import { checkOrderLines, linesAfter, storedPartRecord, type NewPartRecord } from '../../framework/line-parts.ts';
import { writeOrder, type OrderWrite } from '../../framework/order-writes.ts';
import { childListRoute, readRoutes } from '../../framework/resource-routes.ts';
import { created, defineRoute, ok } from '../../framework/route.ts';
import { allowedMove, describeOperation, eventOf, settle } from '../../framework/transitions.ts';
import { SHORTAGE_CONFLICT, type NewReservation, type StockOperation } from '../../../db/stock.ts';
import { fromMicros, toMicros } from '../../../shared/decimal.ts';
import { fulfilment } from './fulfillment.ts';
import { SALES_ORDER_EVENTS, SALES_ORDER_FACTS, SALES_ORDER_TRANSITIONS, type SalesOrderOperation } from './lifecycle.ts';
import { orderLines, resolveSalesOrder, type OrderItems } from './lines.ts';
import {
  createSalesOrder, findSalesOrder, FULFILLMENT_TABLES, linesReserved, listFulfillments, newLineRows, listSalesOrders, SALES_ORDERS, toFulfillment, toSalesOrder,
  type FulfillmentRow, type SalesOrderLineRow, type SalesOrderWithLines, type VersionedSalesOrder,
} from './queries.ts';
import {
  CreateFulfillment, CreateSalesOrder, FulfillSalesOrder, ReserveSalesOrder, SalesFulfillment, SalesFulfillmentResult,
  SalesOrder, SalesOrderListQuery,
} from './schema.ts';

const tag = 'Sales orders';
const illegalMove = 'The order is not in a status this operation applies to; the body names its `status` and the `operation`.';

/** What each line still needs (neither fulfilled nor reserved yet), reserved at `locationId`. */
function unreserved(order: Pick<SalesOrderWithLines, 'id' | 'lines'>, locationId: string): NewReservation[] {
  return order.lines.flatMap((line) => {
    const remainder = toMicros(line.quantity) - toMicros(line.quantity_fulfilled) - toMicros(line.quantity_reserved);
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
    + 'in order (`SO-000001`, ...) when absent: a refused create uses no number up (only two identical creates racing can '
    + 'leave one unused). A 400 names every problem at once, shape and references (unknown customer, item or sku, '
    + 'archived item, item without a price) together. `salesOrderNumber` and `integrationSourceId` are unique in '
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
    const id = randomUUID();
    const lineRows = newLineRows(auth.accountId, id, lines);
    return created(await createSalesOrder(db, auth, id, {
      customerId: body.customerId, salesOrderNumber: body.salesOrderNumber, integrationSourceId: body.integrationSourceId, total,
    }, lineRows, body.locationId ? unreserved({ id, lines: lineRows }, body.locationId) : []));
  },
});

/** What an operation does to the order as read, besides moving it along its life cycle. */
interface Effect {
  stock?: Pick<StockOperation, 'move' | 'reserve' | 'close'>;
  /** The fulfilment it writes. */
  fulfilment?: NewPartRecord<SalesOrderLineRow>;
  /** Facts the life cycle's outcomes depend on, once the operation applied. */
  facts?: { complete?: boolean };
  /** Where a complete order was fulfilled from, when that was one location. */
  fulfilledLocationId?: string;
}

/** What `operation` does to the order as read: its effect, the status the move ends in, the order as it will then stand and its event. */
function plan(auth: ApiKeyIdentity, order: VersionedSalesOrder, operation: SalesOrderOperation, effectOf: (order: VersionedSalesOrder) => Effect) {
  const move = allowedMove(SALES_ORDER_TRANSITIONS, 'sales order', order.status, operation);
  const effect = effectOf(order);
  const status = settle(move, effect.facts);
  const fulfilledLocationId = effect.fulfilledLocationId ?? order.fulfilled_location_id;
  const now = randomUUID();
  const record = toSalesOrder({
    ...order, status, fulfilled_location_id: fulfilledLocationId, updated_at: now,
    lines: linesReserved(linesAfter(order.lines, effect.fulfilment?.parts ?? [], FULFILLMENT_TABLES), effect.stock?.reserve ?? [], effect.stock?.close),
    fulfillments: effect.fulfilment
      ? [...order.fulfillments, storedPartRecord<SalesOrderLineRow, FulfillmentRow>(FULFILLMENT_TABLES, auth, effect.fulfilment, now)]
      : order.fulfillments,
  });
  const write: OrderWrite = {
    set: (q) => ({ status: q.param(status, 'text'), fulfilled_location_id: q.param(fulfilledLocationId, 'uuid') }),
    part: effect.fulfilment && { tables: FULFILLMENT_TABLES, record: effect.fulfilment },
    record, now, event: eventOf(SALES_ORDER_EVENTS, operation, status),
  };
  return { stock: { accountId: auth.accountId, userId: auth.userId, ...effect.stock }, write, fulfilmentId: effect.fulfilment?.id };
}

/** Runs `operation` on the order (see writeOrder). Answers the order after it and its fulfilment's id. */
async function transition(db: Knex, auth: ApiKeyIdentity, id: string, operation: SalesOrderOperation, effectOf: (order: VersionedSalesOrder) => Effect) {
  const { record, plan: planned } = await writeOrder<VersionedSalesOrder, ReturnType<typeof plan>, SalesOrder>(
    db, SALES_ORDERS, () => findSalesOrder(db, auth.accountId, id), (order) => plan(auth, order, operation, effectOf));
  return { order: record, fulfilmentId: planned.fulfilmentId };
}

/** A fulfilment as an effect (see fulfilment). */
function shipping(request: CreateFulfillment) {
  return (order: VersionedSalesOrder): Effect => {
    const { stock, record, complete } = fulfilment(order, request);
    const locations = new Set([...order.fulfillments.map((row) => row.location_id), request.locationId]);
    return { stock, fulfilment: record, facts: { complete }, fulfilledLocationId: complete && locations.size === 1 ? request.locationId : undefined };
  };
}

const SHIPPING = 'What the order reserved there for those lines is taken first (its reservations are consumed: `reservation.released`, '
  + 'reason `fulfilled`), the rest must be available (not reserved for anything else); a line then holding more than it still needs '
  + 'releases the excess, elsewhere first (reason `completed`). Stock movements of type `sales_fulfillment` whose `source` is the '
  + 'fulfilment, each with its `stock.adjusted` event.';

const fulfill = defineRoute({
  method: 'post', path: '/sales-orders/{id}/fulfill', operationId: 'fulfillSalesOrder', tag,
  summary: 'Fulfil everything a sales order has left',
  description: `${describeOperation(SALES_ORDER_TRANSITIONS, 'fulfill', SALES_ORDER_FACTS)} Ships what every line has left from `
    + `\`locationId\` as one fulfilment (the same as \`POST /sales-orders/{id}/fulfillments\` without \`lines\`), all lines or none. ${SHIPPING} `
    + 'If any line is short it is a 409 whose `shortages` names each and nothing changes. Records a `sales_order.fulfilled` event.',
  body: FulfillSalesOrder,
  resolve: checkReferences([{ table: 'locations', field: 'locationId' }]),
  success: { status: 200, description: 'The fulfilled sales order', schema: SalesOrder },
  errors: { 404: 'No such sales order in this account', 409: `${illegalMove} Or a line is short: ${SHORTAGE_CONFLICT}` },
  handler: async ({ db, auth, params, body }) => ok((await transition(db, auth, params.id ?? '', 'fulfill', shipping(body))).order),
});

const createFulfillment = defineRoute({
  method: 'post', path: '/sales-orders/{id}/fulfillments', operationId: 'createSalesFulfillment', tag,
  summary: 'Ship some of a sales order',
  description: `${describeOperation(SALES_ORDER_TRANSITIONS, 'ship', SALES_ORDER_FACTS)} Ships \`lines\` (each an order line and a `
    + 'quantity, at most what it has left) from `locationId`, or without `lines` everything the order has left; it may be repeated, '
    + `from other locations too. ${SHIPPING} All lines or none: a short line is a 409 naming every short level (\`shortages\`), a line `
    + 'asked for more than it has left a 409 naming each such line and what it has left (`remainders`). Records '
    + '`sales_order.partially_fulfilled`, or `sales_order.fulfilled` when the order is complete.',
  body: CreateFulfillment,
  resolve: checkAll(checkReferences([{ table: 'locations', field: 'locationId' }]), checkOrderLines(FULFILLMENT_TABLES)),
  success: { status: 201, description: 'The fulfilment, with the order as it stands after it (`salesOrder`)', schema: SalesFulfillmentResult },
  errors: {
    404: 'No such sales order in this account',
    409: `${illegalMove} Or a line is asked for more than it has left: \`remainders\` names each (\`lineItemId\`, \`itemId\`, \`requested\`, `
      + `\`remaining\`). Or a line is short: ${SHORTAGE_CONFLICT}`,
  },
  handler: async ({ db, auth, params, body }) => {
    const { order, fulfilmentId } = await transition(db, auth, params.id ?? '', 'ship', shipping(body));
    return created({ ...order.fulfillments.find((row) => row.id === fulfilmentId)!, salesOrder: order });
  },
});

const fulfillments = childListRoute({
  path: '/sales-orders/{id}/fulfillments', tag, noun: 'fulfilment', record: SalesFulfillment, toRecord: toFulfillment,
  parent: { table: 'sales_orders', noun: 'sales order' }, list: listFulfillments,
  description: 'What shipped for the order, oldest first, a page at a time (the order embeds them all as `fulfillments` too).',
});

const cancel = defineRoute({
  method: 'post', path: '/sales-orders/{id}/cancel', operationId: 'cancelSalesOrder', tag,
  summary: 'Cancel a sales order',
  description: `${describeOperation(SALES_ORDER_TRANSITIONS, 'cancel', SALES_ORDER_FACTS)} Takes no body. What the order has not shipped `
    + 'is cancelled (what shipped stays shipped) and what it reserved is released (`reservation.released`, reason `cancelled`). '
    + 'Records a `sales_order.cancelled` event.',
  success: { status: 200, description: 'The cancelled sales order', schema: SalesOrder },
  errors: { 404: 'No such sales order in this account', 409: illegalMove },
  handler: async ({ db, auth, params }) => ok((await transition(db, auth, params.id ?? '', 'cancel', (order) => ({
    stock: { close: order.reservations.map((row) => ({ row, quantity: row.quantity, as: 'released', reason: 'cancelled' })) },
  }))).order),
});

const reserve = defineRoute({
  method: 'post', path: '/sales-orders/{id}/reserve', operationId: 'reserveSalesOrder', tag,
  summary: 'Reserve a sales order',
  description: `${describeOperation(SALES_ORDER_TRANSITIONS, 'reserve', SALES_ORDER_FACTS)} Reserves at \`locationId\` what each line `
    + 'still needs (neither fulfilled nor reserved yet), all lines or none (`reservation.created` for each); a line that needs nothing more is left as it is.',
  body: ReserveSalesOrder,
  resolve: checkReferences([{ table: 'locations', field: 'locationId' }]),
  success: { status: 200, description: 'The order, each line with what it holds (`quantityReserved`)', schema: SalesOrder },
  errors: { 404: 'No such sales order in this account', 409: `${illegalMove} Or a line is short there: ${SHORTAGE_CONFLICT}` },
  handler: async ({ db, auth, params, body }) => ok((await transition(db, auth, params.id ?? '', 'reserve', (order) => ({
    stock: { reserve: unreserved(order, body.locationId) },
  }))).order),
});

const salesOrders = readRoutes({
  path: '/sales-orders', tag, noun: 'sales order', record: SalesOrder, query: SalesOrderListQuery,
  list: listSalesOrders, find: findSalesOrder, toRecord: toSalesOrder,
  listDescription: 'Each order with its lines.',
});

export const salesOrderRoutes = [salesOrders.list, create, salesOrders.get, fulfill, createFulfillment, fulfillments, cancel, reserve];

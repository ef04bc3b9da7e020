import { refine } from 'superstruct';
import { listQuery } from '../../framework/pagination.ts';
import {
  array, boolean, calendarDate, decimal, describe, enums, id, list, named, nullable, object, optional, text, timestamp, type Infer,
} from '../../framework/schema.ts';
import { isDecimal, ORDER_TOTAL_TOO_LARGE, orderTotal } from '../../../shared/decimal.ts';
import { PURCHASE_ORDER_STATUSES } from './lifecycle.ts';

const MAX_LINES = 500;

/** The order's lines as priced lines: a purchase order's price is its unit cost. */
export const pricedLines = (lines: ReadonlyArray<{ quantity: number; unitCost: number }>) =>
  lines.map((line) => ({ quantity: line.quantity, price: line.unitCost }));

export const PurchaseOrderLine = named('PurchaseOrderLine', object({
  id: id(),
  itemId: id(),
  quantity: decimal({ sign: 'positive' }),
  unitCost: decimal({ sign: 'nonNegative', example: 7.25 }),
  quantityReceived: decimal({ sign: 'nonNegative', description: 'Taken in by the order\'s receipts so far; the line is complete when it equals `quantity`.' }),
}));

export const PurchaseReceipt = named('PurchaseReceipt', object({
  id: id(),
  purchaseOrderId: id(),
  locationId: id('Where the goods were received: the order\'s location.'),
  reference: nullable(text({ description: 'Yours, as sent: the supplier\'s delivery note, say.' })),
  lines: array(named('PurchaseReceiptLine', object({
    lineId: id('The order line received.'),
    itemId: id(),
    quantity: decimal({ sign: 'positive', description: 'Received on that line by this receipt.' }),
  }))),
  createdBy: id('The user the API key acts as.'),
  createdAt: timestamp(),
}));
export type PurchaseReceipt = Infer<typeof PurchaseReceipt>;

export const PurchaseOrder = named('PurchaseOrder', object({
  id: id(),
  supplierName: text(),
  locationId: id('Where receipts and `close` receive the goods.'),
  status: describe(enums([...PURCHASE_ORDER_STATUSES]), {
    description: '`draft` on create; `partially_received` once a receipt took some of it in, `closed` once every line is received or it '
      + 'was closed; see the transition operations.',
  }),
  expectedDate: nullable(calendarDate('When the goods are expected.')),
  reference: nullable(text()),
  lines: array(PurchaseOrderLine),
  receipts: describe(array(PurchaseReceipt), { description: 'What was received, oldest first.' }),
  total: decimal({ sign: 'nonNegative', description: 'Sum of quantity × unitCost over the lines, exact, rounded to 6 decimal places.' }),
  createdAt: timestamp(),
  updatedAt: timestamp(),
}));
export type PurchaseOrder = Infer<typeof PurchaseOrder>;

const CreatePurchaseOrderLine = named('CreatePurchaseOrderLine', object({
  itemId: id('An item of your account, not archived.'),
  quantity: decimal({ sign: 'positive', description: 'Units ordered: receipts take in at most this many.' }),
  unitCost: decimal({ sign: 'nonNegative', example: 7.25 }),
}));

const createFields = object({
  supplierName: text({ min: 1, max: 255 }),
  locationId: id('A location of your account: where receipts and `close` receive the goods.'),
  lines: describe(
    refine(array(CreatePurchaseOrderLine), 'lines', (lines) =>
      (lines.length >= 1 && lines.length <= MAX_LINES) || `must have from 1 to ${MAX_LINES} lines`),
    { minItems: 1, maxItems: MAX_LINES, description: 'At least one line; one item may appear on several lines.' },
  ),
  expectedDate: optional(nullable(calendarDate('When the goods are expected, YYYY-MM-DD.'))),
  reference: optional(nullable(text({ max: 255, description: 'Your own reference, e.g. the supplier\'s order number.' }))),
});

// The total is stored like every amount (15 significant digits), so an order whose total would not fit is refused.
// superstruct runs this refinement even when a line's number failed its own (1e400 is a number, just not a finite
// one): those are reported at their lines, and the total is judged only when every number is a decimal.
export const CreatePurchaseOrder = named('CreatePurchaseOrder', refine(createFields, 'purchaseOrder', (order) =>
  !order.lines.every((line) => isDecimal(line.quantity) && isDecimal(line.unitCost))
  || orderTotal(pricedLines(order.lines)) !== undefined
  || { path: ['lines'], message: ORDER_TOTAL_TOO_LARGE }));
export type CreatePurchaseOrder = Infer<typeof CreatePurchaseOrder>;

/** A transition's body: none, or an empty object; any field is a 400 rather than silently ignored. */
export const PurchaseOrderTransition = named('PurchaseOrderTransition', optional(describe(object({}), {
  description: 'Transitions take no parameters: send no body or `{}`.',
})));

/** Lines one receipt may carry: as many as an order has. */
const ReceiptLine = named('ReceiptLineRequest', object({
  lineId: id('A line of this order.'),
  quantity: decimal({ sign: 'positive', description: 'At most what the line has outstanding.', example: 40 }),
}));

export const CreateReceipt = named('CreateReceipt', optional(object({
  lines: optional(list(ReceiptLine, {
    min: 1, max: MAX_LINES, description: 'The lines, or parts of lines, that arrived, each line once. Absent: everything outstanding.',
  })),
  reference: optional(nullable(text({ max: 255, description: 'Optional: yours, kept on the receipt (the supplier\'s delivery note, say).' }))),
})));
export type CreateReceipt = Infer<typeof CreateReceipt>;

/** The answer of a receipt: it, and the order as it stands after. */
export const PurchaseReceiptResult = named('PurchaseReceiptResult', object({
  ...PurchaseReceipt.schema,
  purchaseOrder: PurchaseOrder,
}));

export const ClosePurchaseOrder = named('ClosePurchaseOrder', optional(describe(object({
  receiveOutstanding: optional(describe(boolean(), {
    default: true,
    description: 'true: what every line still has outstanding is received as one receipt before the order closes. false: the order '
      + 'closes short, receiving nothing more.',
  })),
}), { description: 'Optional: no body receives what is outstanding.' })));
export type ClosePurchaseOrder = Infer<typeof ClosePurchaseOrder>;

export const PurchaseOrderListQuery = listQuery({
  status: optional(describe(enums([...PURCHASE_ORDER_STATUSES]), { description: 'Only orders in this status.' })),
  locationId: optional(describe(text({ max: 64 }), { description: 'Only orders received at this location.' })),
});
export type PurchaseOrderListQuery = Infer<typeof PurchaseOrderListQuery>;

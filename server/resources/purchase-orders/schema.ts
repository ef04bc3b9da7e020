import { refine } from 'superstruct';
import { listQuery } from '../../framework/pagination.ts';
import {
  array, calendarDate, decimal, describe, enums, id, named, nullable, object, optional, text, timestamp, type Infer,
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
}));

export const PurchaseOrder = named('PurchaseOrder', object({
  id: id(),
  supplierName: text(),
  locationId: id('Where `close` receives the goods.'),
  status: describe(enums([...PURCHASE_ORDER_STATUSES]), { description: '`draft` on create; see the transition operations.' }),
  expectedDate: nullable(calendarDate('When the goods are expected.')),
  reference: nullable(text()),
  lines: array(PurchaseOrderLine),
  total: decimal({ sign: 'nonNegative', description: 'Sum of quantity × unitCost over the lines, exact, rounded to 6 decimal places.' }),
  createdAt: timestamp(),
  updatedAt: timestamp(),
}));
export type PurchaseOrder = Infer<typeof PurchaseOrder>;

const CreatePurchaseOrderLine = named('CreatePurchaseOrderLine', object({
  itemId: id('An item of your account, not archived.'),
  quantity: decimal({ sign: 'positive', description: 'Units ordered; `close` receives exactly this many.' }),
  unitCost: decimal({ sign: 'nonNegative', example: 7.25 }),
}));

const createFields = object({
  supplierName: text({ min: 1, max: 255 }),
  locationId: id('A location of your account: where `close` receives the goods.'),
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

export const PurchaseOrderListQuery = listQuery({
  status: optional(describe(enums([...PURCHASE_ORDER_STATUSES]), { description: 'Only orders in this status.' })),
  locationId: optional(describe(text({ max: 64 }), { description: 'Only orders received at this location.' })),
});
export type PurchaseOrderListQuery = Infer<typeof PurchaseOrderListQuery>;

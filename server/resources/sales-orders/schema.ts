import { isRecord } from '../../../shared/guards.ts';
import { listQuery } from '../../framework/pagination.ts';
import {
  array, decimal, describe, enums, id, list, named, nullable, object, oneOf, optional, text, timestamp, type Infer, type NoShape,
} from '../../framework/schema.ts';
import { SALES_ORDER_STATUSES } from './lifecycle.ts';

/** Lines one order may carry. */
export const MAX_LINES = 1000;

export const SalesOrderLine = named('SalesOrderLine', object({
  id: id(),
  itemId: id(),
  sku: text({ description: "The item's sku when the order was taken." }),
  quantity: decimal({ sign: 'positive' }),
  price: decimal({ sign: 'nonNegative', description: 'Per unit. Shape A orders take the item\'s `price`.', example: 12.5 }),
  quantityFulfilled: decimal({ sign: 'nonNegative', description: 'Shipped by the order\'s fulfilments so far; the line is complete when it equals `quantity`.' }),
  quantityReserved: decimal({
    sign: 'nonNegative',
    description: 'Held for this line by its open reservations, at any location (see `GET /reservations?salesOrderId=`); never more than it still needs.',
  }),
}));
export type SalesOrderLine = Infer<typeof SalesOrderLine>;

export const SalesFulfillment = named('SalesFulfillment', object({
  id: id(),
  salesOrderId: id(),
  locationId: id('Where the goods were taken from.'),
  reference: nullable(text({ description: 'Yours, as sent: a tracking number, a carrier\'s reference.' })),
  lines: array(named('SalesFulfillmentLine', object({
    lineItemId: id('The order line shipped.'),
    itemId: id(),
    quantity: decimal({ sign: 'positive', description: 'Shipped from that line by this fulfilment.' }),
  }))),
  createdBy: id('The user the API key acts as.'),
  createdAt: timestamp(),
}));
export type SalesFulfillment = Infer<typeof SalesFulfillment>;

export const SalesOrder = named('SalesOrder', object({
  id: id(),
  salesOrderNumber: text({ description: 'Yours when you sent one, else assigned per account: `SO-000001`, `SO-000002`, ...' }),
  integrationSourceId: nullable(text({ description: 'Your identifier of the order in the system it came from.' })),
  customerId: id(),
  status: describe(enums([...SALES_ORDER_STATUSES]), {
    description: '`open` on create; `partially_fulfilled` once something shipped, `fulfilled` once every line did; `cancelled` after cancel.',
  }),
  lineItems: describe(list(SalesOrderLine, { min: 1, max: MAX_LINES }), { description: 'In the order sent, whichever shape was sent.' }),
  total: decimal({ sign: 'nonNegative', description: 'The sum of quantity × price over the lines, exact.', example: 62.5 }),
  fulfilledLocationId: nullable(id('Where the order was fulfilled from, once it is, when every fulfilment was from one location; '
    + 'null until then, and when they were from several (see `fulfillments`).')),
  fulfillments: describe(array(SalesFulfillment), { description: 'What shipped, oldest first.' }),
  createdAt: timestamp(),
  updatedAt: timestamp(),
}));
export type SalesOrder = Infer<typeof SalesOrder>;

const numbers = {
  salesOrderNumber: optional(nullable(text({
    min: 1, max: 100,
    description: 'Optional: your order number, unique in your account (a duplicate is a 409 naming the existing order). Absent, one is assigned.',
  }))),
  integrationSourceId: optional(nullable(text({
    min: 1, max: 255,
    description: 'Optional: the order\'s id in your shop or ERP, unique in your account: a retry of the same order is a 409 naming the existing one.',
  }))),
  locationId: optional(nullable(id('Optional: a location of your account where every line is reserved at once, all or nothing: if any line '
    + 'is short there the create is a 409 naming each short line (`shortages`) and nothing is written. Absent, nothing is reserved.'))),
};
const customerId = id('A customer of your account.');
const quantity = decimal({ sign: 'positive', description: 'Greater than 0, at most 6 decimal places.', example: 5 });

const EXAMPLE_CUSTOMER = '9b2d6c4e-1f3a-4c8b-a7d5-2e6f0b9c8d71';

const lineItems = list(object({
  itemId: id('An item of your account that has a `price`: the line takes it.'),
  quantity,
}), { min: 1, max: MAX_LINES });

const items = list(object({
  sku: text({ min: 1, max: 100, description: 'The sku of an item of your account.' }),
  quantity,
  price: decimal({ sign: 'nonNegative', description: 'Per unit, at most 6 decimal places.', example: 12.5 }),
}), { min: 1, max: MAX_LINES });

export const SalesOrderShapeA = named('SalesOrderShapeA', describe(object({
  customerId,
  lineItems,
  ...numbers,
}), {
  description: 'Lines by item id; each line takes the item\'s current `price`.',
  example: { customerId: EXAMPLE_CUSTOMER, lineItems: [{ itemId: '3f8e2c1a-6b7d-4e9f-9a21-5c0d8e7b6a14', quantity: 5 }] },
}));

export const SalesOrderShapeB = named('SalesOrderShapeB', describe(object({
  ...numbers,
  customerId,
  items,
}), {
  description: 'Lines by sku with explicit prices, as shops and ERPs send them.',
  example: {
    salesOrderNumber: 'WEB-10042',
    integrationSourceId: 'shopify:5124398',
    customerId: EXAMPLE_CUSTOMER,
    items: [{ sku: 'BOLT-M10', quantity: 100, price: 0.35 }],
  },
}));

/** Every field of either shape: a body that fits neither is still checked field by field. */
const Shared = object({ customerId, ...numbers, lineItems: optional(lineItems), items: optional(items) });

/** Which shape a body is in, by the list it carries: `lineItems` is shape A, `items` shape B. */
export function shapeOf(body: unknown): 'A' | 'B' | 'both' | 'neither' {
  const fields = isRecord(body) ? body : {};
  const a = fields.lineItems !== undefined;
  const b = fields.items !== undefined;
  return a && b ? 'both' : a ? 'A' : b ? 'B' : 'neither';
}

const NOT_BOTH: NoShape = { field: 'items', message: 'send either lineItems (shape A) or items (shape B), not both', shared: Shared };
const NEITHER: NoShape = {
  field: 'lineItems',
  message: 'is required: a list of lines, as lineItems [{itemId, quantity}] (shape A) or items [{sku, quantity, price}] (shape B)',
  shared: Shared,
};

export const CreateSalesOrder = oneOf([SalesOrderShapeA, SalesOrderShapeB], (body) => {
  const shape = shapeOf(body);
  // A value that is no object at all is reported by shape A as "must be an object".
  if (!isRecord(body) || shape === 'A') return SalesOrderShapeA;
  return shape === 'B' ? SalesOrderShapeB : shape === 'both' ? NOT_BOTH : NEITHER;
});
export type CreateSalesOrder = Infer<typeof CreateSalesOrder>;

export const FulfillSalesOrder = named('FulfillSalesOrder', object({
  locationId: id('A location of your account: every line is taken out of stock there.'),
}));
export type FulfillSalesOrder = Infer<typeof FulfillSalesOrder>;

export const FulfillmentLine = named('FulfillmentLineRequest', object({
  lineItemId: id('A line of this order.'),
  quantity: decimal({ sign: 'positive', description: 'At most what the line has left to fulfil.', example: 2 }),
}));

export const CreateFulfillment = named('CreateFulfillment', object({
  locationId: id('A location of your account: the goods are taken out of stock there.'),
  lines: optional(list(FulfillmentLine, {
    min: 1, max: MAX_LINES, description: 'The lines, or parts of lines, to ship, each line once. Absent: everything the order has left.',
  })),
  reference: optional(nullable(text({ max: 255, description: 'Optional: yours, kept on the fulfilment (a tracking number, say).' }))),
}));
export type CreateFulfillment = Infer<typeof CreateFulfillment>;

/** The answer of a fulfilment: it, and the order as it stands after. */
export const SalesFulfillmentResult = named('SalesFulfillmentResult', object({
  ...SalesFulfillment.schema,
  salesOrder: SalesOrder,
}));

export const ReserveSalesOrder = named('ReserveSalesOrder', object({
  locationId: id('A location of your account: what each line has not reserved yet is reserved there.'),
}));
export type ReserveSalesOrder = Infer<typeof ReserveSalesOrder>;

export const SalesOrderListQuery = listQuery({
  status: optional(describe(enums([...SALES_ORDER_STATUSES]), { description: 'Only orders in this status.' })),
  customerId: optional(describe(text({ max: 64 }), { description: 'Only this customer\'s orders.' })),
  integrationSourceId: optional(text({ max: 255, description: 'Exact integration source id: finds the order a shop or ERP sent.' })),
});
export type SalesOrderListQuery = Infer<typeof SalesOrderListQuery>;

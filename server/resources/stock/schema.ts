import { refine } from 'superstruct';
import { MAX_DECIMAL } from '../../../shared/decimal.ts';
import { MOVEMENT_TYPES, SOURCE_TYPES } from '../../../shared/stock.ts';
import { listQuery } from '../../framework/pagination.ts';
import {
  array, boolean, decimal, describe, enums, id, list, named, nullable, object, optional, queryBoolean, text, timestamp, type Infer,
} from '../../framework/schema.ts';

const quantity = (description: string) => decimal({ description });

/** The four numbers of a level (and whether it is oversold), as every answer and event that carries a level has them. */
const levelNumbers = {
  quantity: decimal({ sign: 'nonNegative', description: `On hand: always the sum of the movements of this item at this location, from 0 to ${MAX_DECIMAL} (a change past either end is a 409).` }),
  reserved: decimal({ sign: 'nonNegative', description: 'Promised: the sum of the open reservations here (sales orders and manual holds).' }),
  available: decimal({ description: '`quantity - reserved`: what can still be sold or promised. Negative only when a count or an adjustment recorded the loss of stock already promised (the level is oversold).' }),
  incoming: decimal({ sign: 'nonNegative', description: 'Still to be received here: what confirmed, partially received and on-hold purchase orders have outstanding.' }),
  oversold: describe(boolean(), { type: 'boolean', description: '`available` is below zero: more is promised than is on hand.' }),
};

export const StockLevelSnapshot = named('StockLevelSnapshot', describe(object(levelNumbers), {
  description: 'A level as it stood once the change applied.',
}));

export const StockLevel = named('StockLevel', object({
  itemId: id(),
  locationId: id(),
  ...levelNumbers,
  updatedAt: timestamp(),
}));
export type StockLevel = Infer<typeof StockLevel>;

export const StockMovement = named('StockMovement', object({
  id: id(),
  itemId: id(),
  locationId: id(),
  quantity: quantity('Signed: positive adds stock, negative removes it.'),
  type: describe(enums([...MOVEMENT_TYPES]), { description: 'What kind of change this was.' }),
  reason: nullable(text()),
  source: named('MovementSource', object({
    type: describe(enums([...SOURCE_TYPES]), {
      description: 'The kind of record that caused the movement. A fulfilment\'s movements name it (`sales_fulfillment`), a receipt\'s '
        + 'name it (`purchase_receipt`); those of orders fulfilled or closed before fulfilments and receipts were records name the order.',
    }),
    id: id('The id of that record.'),
  })),
  createdBy: id('The user the API key acts as.'),
  createdAt: timestamp(),
}));
export type StockMovement = Infer<typeof StockMovement>;

/** The `data` of a `stock.adjusted` event: the movement and the level it left. */
export const StockAdjustedEvent = named('StockAdjustedEvent', object({
  ...StockMovement.schema,
  stockLevel: StockLevelSnapshot,
}));
export type StockAdjustedEvent = Infer<typeof StockAdjustedEvent>;

export const StockAdjustment = named('StockAdjustment', object({
  id: id(),
  itemId: id(),
  locationId: id(),
  quantity: quantity('Signed change; negative reduces stock.'),
  reason: text(),
  stockLevel: StockLevelSnapshot,
  createdBy: id(),
  createdAt: timestamp(),
}));
export type StockAdjustment = Infer<typeof StockAdjustment>;

const adjustmentFields = {
  locationId: id('A location of your account.'),
  quantity: decimal({
    sign: 'nonZero', example: -3,
    description: 'Signed and non-zero: a negative value reduces stock. It records a physical change, so a reduction may take reserved stock '
      + '(the level is then oversold: `available` below zero); one that would take the level below zero is a 409.',
  }),
  reason: text({ min: 1, max: 1000, description: 'Free text: damage, cycle count, receiving fix...' }),
};

export const CreateStockAdjustment = named('CreateStockAdjustment', object({
  itemId: id('An item of your account.'),
  ...adjustmentFields,
}));
export type CreateStockAdjustment = Infer<typeof CreateStockAdjustment>;

/** Rows one batch may carry. */
export const MAX_BATCH_ROWS = 1000;

export const CreateStockAdjustmentBatch = named('CreateStockAdjustmentBatch', object({
  adjustments: list(named('StockAdjustmentBatchRow', object({
    itemId: optional(id('The item, by id; or send `sku`.')),
    sku: optional(text({ min: 1, max: 100, description: 'The item, by sku; or send `itemId`.' })),
    ...adjustmentFields,
  })), {
    min: 1, max: MAX_BATCH_ROWS,
    description: `1 to ${MAX_BATCH_ROWS} adjustments, applied in order: several may change one level, and no step may take it below zero.`,
  }),
}));
export type CreateStockAdjustmentBatch = Infer<typeof CreateStockAdjustmentBatch>;

export const StockAdjustmentBatch = named('StockAdjustmentBatch', object({
  data: describe(array(StockAdjustment), { description: 'In the order sent, each with the level it left (after the rows before it).' }),
}));

export const StockTransfer = named('StockTransfer', object({
  id: id(),
  itemId: id(),
  fromLocationId: id(),
  toLocationId: id(),
  quantity: decimal({ sign: 'positive' }),
  reason: nullable(text()),
  stockLevels: named('StockTransferLevels', object({
    from: StockLevelSnapshot,
    to: StockLevelSnapshot,
  })),
  createdBy: id(),
  createdAt: timestamp(),
}));
export type StockTransfer = Infer<typeof StockTransfer>;

export const CreateStockTransfer = named('CreateStockTransfer', refine(object({
  itemId: id('An item of your account.'),
  fromLocationId: id('Where the stock leaves; at least `quantity` must be available there (not reserved; 409 otherwise).'),
  toLocationId: id('Where the stock arrives; must differ from `fromLocationId`.'),
  quantity: decimal({ sign: 'positive', example: 5 }),
  reason: optional(nullable(text({ max: 1000 }))),
}), 'transfer', (transfer) => transfer.fromLocationId !== transfer.toLocationId
  || { path: ['toLocationId'], message: 'must differ from fromLocationId' }));
export type CreateStockTransfer = Infer<typeof CreateStockTransfer>;

const itemFilter = optional(describe(text({ max: 64 }), { description: 'Only this item.' }));
const locationFilter = optional(describe(text({ max: 64 }), { description: 'Only this location.' }));

export const StockLevelListQuery = listQuery({
  itemId: itemFilter,
  locationId: locationFilter,
  oversold: optional(queryBoolean('`true`: only levels where more is reserved than is on hand; `false`: only the others.')),
});
export type StockLevelListQuery = Infer<typeof StockLevelListQuery>;

export const StockMovementListQuery = listQuery({
  itemId: itemFilter,
  locationId: locationFilter,
  type: optional(describe(enums([...MOVEMENT_TYPES]), { description: 'Only movements of this type.' })),
});
export type StockMovementListQuery = Infer<typeof StockMovementListQuery>;

export const StockAdjustmentListQuery = listQuery({ itemId: itemFilter, locationId: locationFilter });
export type StockAdjustmentListQuery = Infer<typeof StockAdjustmentListQuery>;

export const StockTransferListQuery = listQuery({ itemId: itemFilter });
export type StockTransferListQuery = Infer<typeof StockTransferListQuery>;

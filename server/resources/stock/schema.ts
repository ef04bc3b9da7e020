import { refine } from 'superstruct';
import { MAX_DECIMAL } from '../../../shared/decimal.ts';
import { listQuery } from '../../framework/pagination.ts';
import { decimal, describe, enums, id, named, nullable, object, optional, text, timestamp, type Infer } from '../../framework/schema.ts';

export const MOVEMENT_TYPES = ['adjustment', 'transfer', 'purchase_receipt', 'production', 'sales_fulfillment'] as const;
export type MovementType = (typeof MOVEMENT_TYPES)[number];
export const SOURCE_TYPES = ['stock_adjustment', 'stock_transfer', 'purchase_order', 'production_record', 'sales_order'] as const;
export type SourceType = (typeof SOURCE_TYPES)[number];

const quantity = (description: string) => decimal({ description });

export const StockLevel = named('StockLevel', object({
  itemId: id(),
  locationId: id(),
  quantity: decimal({ sign: 'nonNegative', description: `On hand; always the sum of the movements of this item at this location, from 0 to ${MAX_DECIMAL} (a change past either end is a 409).` }),
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
    type: describe(enums([...SOURCE_TYPES]), { description: 'The kind of record that caused the movement.' }),
    id: id('The id of that record.'),
  })),
  createdBy: id('The user the API key acts as.'),
  createdAt: timestamp(),
}));
export type StockMovement = Infer<typeof StockMovement>;

const levelAfter = (description: string) => object({
  quantity: decimal({ sign: 'nonNegative', description }),
});

/** The `data` of a `stock.adjusted` event: the movement and the level it left. */
export const StockAdjustedEvent = named('StockAdjustedEvent', object({
  ...StockMovement.schema,
  stockLevel: levelAfter('The level at this item and location once the movement applied.'),
}));
export type StockAdjustedEvent = Infer<typeof StockAdjustedEvent>;

export const StockAdjustment = named('StockAdjustment', object({
  id: id(),
  itemId: id(),
  locationId: id(),
  quantity: quantity('Signed change; negative reduces stock.'),
  reason: text(),
  stockLevel: levelAfter('The level at this item and location right after the adjustment.'),
  createdBy: id(),
  createdAt: timestamp(),
}));
export type StockAdjustment = Infer<typeof StockAdjustment>;

export const CreateStockAdjustment = named('CreateStockAdjustment', object({
  itemId: id('An item of your account.'),
  locationId: id('A location of your account.'),
  quantity: decimal({ sign: 'nonZero', description: 'Signed and non-zero: a negative value reduces stock. A change that would take the level below zero is a 409.', example: -3 }),
  reason: text({ min: 1, max: 1000, description: 'Free text: damage, cycle count, receiving fix...' }),
}));
export type CreateStockAdjustment = Infer<typeof CreateStockAdjustment>;

export const StockTransfer = named('StockTransfer', object({
  id: id(),
  itemId: id(),
  fromLocationId: id(),
  toLocationId: id(),
  quantity: decimal({ sign: 'positive' }),
  reason: nullable(text()),
  stockLevels: named('StockTransferLevels', object({
    from: levelAfter('The level at the source location right after the transfer.'),
    to: levelAfter('The level at the destination location right after the transfer.'),
  })),
  createdBy: id(),
  createdAt: timestamp(),
}));
export type StockTransfer = Infer<typeof StockTransfer>;

export const CreateStockTransfer = named('CreateStockTransfer', refine(object({
  itemId: id('An item of your account.'),
  fromLocationId: id('Where the stock leaves; it must hold at least `quantity` (409 otherwise).'),
  toLocationId: id('Where the stock arrives; must differ from `fromLocationId`.'),
  quantity: decimal({ sign: 'positive', example: 5 }),
  reason: optional(nullable(text({ max: 1000 }))),
}), 'transfer', (transfer) => transfer.fromLocationId !== transfer.toLocationId
  || { path: ['toLocationId'], message: 'must differ from fromLocationId' }));
export type CreateStockTransfer = Infer<typeof CreateStockTransfer>;

const itemFilter = optional(describe(text({ max: 64 }), { description: 'Only this item.' }));
const locationFilter = optional(describe(text({ max: 64 }), { description: 'Only this location.' }));

export const StockLevelListQuery = listQuery({ itemId: itemFilter, locationId: locationFilter });
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

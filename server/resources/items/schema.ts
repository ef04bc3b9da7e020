import { listQuery } from '../../framework/pagination.ts';
import {
  array, boolean, decimal, describe, id, integer, list, named, nullable, object, optional, patchOf, queryBoolean, text, timestamp, withDefault,
  type Infer,
} from '../../framework/schema.ts';

export const Item = named('Item', object({
  id: id(),
  sku: text({ description: 'Stock-keeping unit, unique within the account.' }),
  name: text(),
  description: nullable(text()),
  unit: text({ description: 'Unit of measure.' }),
  price: nullable(decimal({ description: 'Sale price per unit; sales orders of shape A take it.' })),
  cost: nullable(decimal({ description: 'Purchase cost per unit.' })),
  barcode: nullable(text()),
  archived: describe(boolean(), { type: 'boolean', description: 'Archived items stay readable by id and are left out of lists.' }),
  createdAt: timestamp(),
  updatedAt: timestamp(),
}));
export type Item = Infer<typeof Item>;

export const CreateItem = named('CreateItem', object({
  sku: text({ min: 1, max: 100, description: 'Unique within the account; a duplicate is a 409.' }),
  name: text({ min: 1, max: 255 }),
  description: optional(nullable(text({ max: 5000 }))),
  unit: withDefault(text({ min: 1, max: 32 }), 'pcs'),
  price: optional(nullable(decimal({ sign: 'nonNegative', example: 12.5 }))),
  cost: optional(nullable(decimal({ sign: 'nonNegative', example: 7.25 }))),
  barcode: optional(nullable(text({ max: 64 }))),
}));
export type CreateItem = Infer<typeof CreateItem>;

/** Rows one batch may carry. */
export const MAX_BATCH_ITEMS = 1000;

export const ItemBatchRow = named('ItemBatchRow', object({
  sku: text({ min: 1, max: 100, description: 'The item\'s sku: an item of your account with it is updated, else one is created.' }),
  name: optional(text({ min: 1, max: 255, description: 'Required for a new sku.' })),
  description: optional(nullable(text({ max: 5000 }))),
  unit: optional(text({ min: 1, max: 32, description: 'A new item without one is in `pcs`.' })),
  price: optional(nullable(decimal({ sign: 'nonNegative', example: 12.5 }))),
  cost: optional(nullable(decimal({ sign: 'nonNegative', example: 7.25 }))),
  barcode: optional(nullable(text({ max: 64 }))),
}));
export type ItemBatchRow = Infer<typeof ItemBatchRow>;

export const UpsertItems = named('UpsertItems', object({
  items: list(ItemBatchRow, { min: 1, max: MAX_BATCH_ITEMS, description: `1 to ${MAX_BATCH_ITEMS} items, each sku once.` }),
}));
export type UpsertItems = Infer<typeof UpsertItems>;

export const ItemBatchResult = named('ItemBatchResult', object({
  data: describe(array(Item), { description: 'Every item of the batch as it now stands, in the order sent.' }),
  created: integer({ minimum: 0, description: 'New skus.' }),
  updated: integer({ minimum: 0, description: 'Existing items a field of which changed.' }),
  unchanged: integer({ minimum: 0, description: 'Existing items sent as they already were: no event.' }),
}));

export const UpdateItem = named('UpdateItem', patchOf(CreateItem, {
  archived: optional(describe(boolean(), { type: 'boolean', description: '`false` restores an archived item.' })),
}));
export type UpdateItem = Infer<typeof UpdateItem>;

export const ItemListQuery = listQuery({
  sku: optional(text({ max: 100, description: 'Exact SKU.' })),
  q: optional(text({ min: 1, max: 255, description: 'Case-insensitive substring of the name or SKU.' })),
  includeArchived: optional(queryBoolean('Include archived items (default false).')),
});
export type ItemListQuery = Infer<typeof ItemListQuery>;

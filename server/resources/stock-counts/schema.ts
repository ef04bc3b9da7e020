import { listQuery } from '../../framework/pagination.ts';
import { array, decimal, describe, id, list, named, nullable, object, optional, text, timestamp, type Infer } from '../../framework/schema.ts';
import { StockLevelSnapshot } from '../stock/schema.ts';

/** Lines one count may carry. */
export const MAX_COUNT_LINES = 1000;

export const StockCountLine = named('StockCountLine', object({
  itemId: id(),
  sku: text({ description: 'The item\'s sku when it was counted.' }),
  countedQuantity: decimal({ sign: 'nonNegative', description: 'What was counted: the level was set to it.' }),
  previousQuantity: decimal({ sign: 'nonNegative', description: 'What the level held just before.' }),
  difference: decimal({ description: '`countedQuantity - previousQuantity`: the `count` movement\'s quantity (no movement when 0).' }),
  stockLevel: StockLevelSnapshot,
}));

export const StockCount = named('StockCount', object({
  id: id(),
  locationId: id(),
  reason: nullable(text()),
  lines: array(StockCountLine),
  createdBy: id('The user the API key acts as.'),
  createdAt: timestamp(),
}));
export type StockCount = Infer<typeof StockCount>;

const CountLineRequest = named('StockCountLineRequest', object({
  itemId: optional(id('The item counted, by id; or send `sku`.')),
  sku: optional(text({ min: 1, max: 100, description: 'The item counted, by sku; or send `itemId`.' })),
  countedQuantity: decimal({ sign: 'nonNegative', description: 'What is there: the level is set to it.', example: 42 }),
  expectedQuantity: optional(decimal({
    sign: 'nonNegative',
    description: 'Optional: the level\'s `quantity` when you read it before counting. If the level no longer holds it, the count is a 409 '
      + 'naming every such line and nothing is written, so a count never silently overwrites changes made since.',
  })),
}));

export const CreateStockCount = named('CreateStockCount', object({
  locationId: id('A location of your account: where the count was taken.'),
  reason: optional(nullable(text({ max: 1000, description: 'Optional: why (a cycle count of aisle 4, a stocktake...).' }))),
  lines: list(CountLineRequest, { min: 1, max: MAX_COUNT_LINES, description: `1 to ${MAX_COUNT_LINES} lines, each item once.` }),
}));
export type CreateStockCount = Infer<typeof CreateStockCount>;

export const StockCountListQuery = listQuery({
  locationId: optional(describe(text({ max: 64 }), { description: 'Only counts at this location.' })),
});
export type StockCountListQuery = Infer<typeof StockCountListQuery>;

import { refine } from 'superstruct';
import { listQuery } from '../../framework/pagination.ts';
import { array, decimal, describe, id, named, nullable, object, optional, text, timestamp, type Infer } from '../../framework/schema.ts';

const MAX_COMPONENTS = 500;

const Component = named('ProductionComponent', object({
  itemId: id(),
  quantity: decimal({ sign: 'positive', description: 'The total consumed by this record, not a per-unit amount.' }),
}));

export const ProductionRecord = named('ProductionRecord', object({
  id: id(),
  itemId: id('The item produced.'),
  locationId: id('Where it was produced and its components consumed.'),
  quantity: decimal({ sign: 'positive', description: 'Units produced.' }),
  components: array(Component),
  reference: nullable(text()),
  createdBy: id('The user the API key acts as.'),
  createdAt: timestamp(),
  updatedAt: timestamp(),
}));
export type ProductionRecord = Infer<typeof ProductionRecord>;

const createFields = object({
  itemId: id('The item produced: of your account, not archived, and not one of its own components.'),
  locationId: id('A location of your account: the produced quantity is added and the components consumed here.'),
  quantity: decimal({ sign: 'positive', description: 'Units produced.' }),
  components: describe(
    refine(array(Component), 'components', (components) =>
      (components.length >= 1 && components.length <= MAX_COMPONENTS) || `must have from 1 to ${MAX_COMPONENTS} components`),
    {
      minItems: 1, maxItems: MAX_COMPONENTS,
      description: 'What production consumed; each item at most once, with its total. A component short at the location is a 409 and nothing is written.',
    },
  ),
  reference: optional(nullable(text({ max: 255, description: 'Your own reference, e.g. a work order number.' }))),
});

/**
 * An item listed twice is refused rather than summed: the caller states each component's total once, so a
 * duplicate is more likely a mistake than an intent, and the record reads back exactly as it was sent.
 */
export const CreateProductionRecord = named('CreateProductionRecord', refine(createFields, 'productionRecord', (record) => {
  const firstIndex = new Map<string, number>();
  return record.components.flatMap((component, index) => {
    const path = ['components', index, 'itemId'];
    if (component.itemId === record.itemId) return [{ path, message: 'is the item produced: it cannot be its own component' }];
    const first = firstIndex.get(component.itemId);
    if (first !== undefined) return [{ path, message: `repeats components[${first}].itemId: list each component once with its total` }];
    firstIndex.set(component.itemId, index);
    return [];
  });
}));
export type CreateProductionRecord = Infer<typeof CreateProductionRecord>;

export const ProductionRecordListQuery = listQuery({
  itemId: optional(describe(text({ max: 64 }), { description: 'Only records that produced this item.' })),
});
export type ProductionRecordListQuery = Infer<typeof ProductionRecordListQuery>;

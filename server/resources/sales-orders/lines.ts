// A create body's lines, in either shape, as order lines: the customer, the location and the items they name are
// looked up in one query (not one per line or table), and every problem is named by its path in the body as sent.
import type { Knex } from 'knex';
import { isRecord } from '../../../shared/guards.ts';
import type { Problem } from '../../../shared/errors.ts';
import { findRecords, lookupsOf, referenceProblems, referencesIn, type ReferenceField } from '../../framework/references.ts';
import type { Resolution } from '../../framework/route.ts';
import { shapeOf, type CreateSalesOrder } from './schema.ts';

export interface OrderItem {
  id: string;
  sku: string;
  price: number | null;
  archived: boolean;
}

/** The items the body's lines name, keyed as the lines name them: by id (shape A) or by sku (shape B). */
export type OrderItems = Map<string, OrderItem>;

export interface NewLine {
  itemId: string;
  sku: string;
  quantity: number;
  price: number;
}

/** `[index, value]` of every line whose `field` is a string: the others are the struct's to report. */
function keysOf(lines: unknown, field: string): Array<[number, string]> {
  if (!Array.isArray(lines)) return [];
  return lines.flatMap((line: unknown, index) => {
    const value = isRecord(line) ? line[field] : undefined;
    return typeof value === 'string' ? [[index, value] as [number, string]] : [];
  });
}

function lineProblem(item: OrderItem | undefined, path: string, missing: string, needsPrice: boolean): Problem | undefined {
  if (!item) return { path, message: missing };
  if (item.archived) return { path, message: 'this item is archived: restore it (PATCH /items/{id} with archived false) or order another' };
  if (needsPrice && item.price === null) {
    return { path, message: 'this item has no price: set its price, or send shape B (items) with an explicit price per line' };
  }
  return undefined;
}

const ORDER_REFERENCES: ReferenceField[] = [{ table: 'customers', field: 'customerId' }, { table: 'locations', field: 'locationId' }];

/** Looks up the customer, the location and the items a create body names, whatever else is wrong with it: one query. */
export async function resolveSalesOrder(db: Knex, accountId: string, body: unknown): Promise<Resolution<OrderItems>> {
  const fields = isRecord(body) ? body : {};
  const references = referencesIn(body, ORDER_REFERENCES);
  const shape = shapeOf(body);
  const [list, field, column] = shape === 'A' ? ['lineItems', 'itemId', 'id'] as const : ['items', 'sku', 'sku'] as const;
  const keys = shape === 'A' || shape === 'B' ? keysOf(fields[list], field) : [];
  const found = await findRecords(db, accountId, [...lookupsOf(references), { table: 'items', column, keys: keys.map(([, key]) => key) }]);
  const problems = referenceProblems(references, found);
  const items: OrderItems = new Map(found.filter((record) => record.table === 'items')
    .map((record) => [record[column]!, { id: record.id, sku: record.sku!, price: record.price, archived: record.archived }]));
  for (const [index, key] of keys) {
    const missing = shape === 'A' ? 'no item with this id in your account' : 'no item with this sku in your account';
    const problem = lineProblem(items.get(key), `${list}[${index}].${field}`, missing, shape === 'A');
    if (problem) problems.push(problem);
  }
  return { problems, resolved: items };
}

/** Order lines from a checked body and the items resolveSalesOrder found for it. */
export function orderLines(body: CreateSalesOrder, items: OrderItems): NewLine[] {
  if ('lineItems' in body) {
    return body.lineItems.map((line) => {
      const item = items.get(line.itemId)!;
      return { itemId: item.id, sku: item.sku, quantity: line.quantity, price: item.price! };
    });
  }
  return body.items.map((line) => ({ itemId: items.get(line.sku)!.id, sku: line.sku, quantity: line.quantity, price: line.price }));
}

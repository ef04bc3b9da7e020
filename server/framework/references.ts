// Checks that the records a request body names belong to the caller's account, naming every one that does not.
import type { Knex } from 'knex';
import { isRecord, isUuid } from '../../shared/guards.ts';
import type { Problem } from '../../shared/errors.ts';

type Table = 'items' | 'locations' | 'customers';

export interface Reference {
  table: Table;
  id: string;
  /** Where the id stands in the body: `lineItems[0].itemId`. */
  path: string;
  /** The record must also not be archived (items): new records may not name what was retired. */
  active?: boolean;
}

const LABELS = { items: 'item', locations: 'location', customers: 'customer' } as const;

/** Rows of `table` whose `column` is one of `keys` (ids that are not uuids can name nothing and are left out). */
export interface Lookup {
  table: Table;
  column: 'id' | 'sku';
  keys: string[];
}

/** A record a lookup found; `sku` and `price` for items only, `archived` false for what cannot be archived. */
export interface FoundRecord {
  table: Table;
  id: string;
  sku: string | null;
  price: number | null;
  archived: boolean;
}

/** The account's records of every lookup: one query, whatever their number. */
export async function findRecords(db: Knex, accountId: string, lookups: Lookup[]): Promise<FoundRecord[]> {
  const parts: string[] = [];
  const values: Knex.Value[] = [];
  for (const { table, column, keys } of lookups) {
    const wanted = [...new Set(column === 'id' ? keys.filter(isUuid) : keys)];
    if (wanted.length === 0) continue;
    const itemColumns = table === 'items' ? 'sku, price, archived_at is not null' : 'null, null::numeric, false';
    parts.push(`select ?::text, id, ${itemColumns} from ${table} where account_id = ?::uuid and ${column} = any(?::${column === 'id' ? 'uuid' : 'text'}[])`);
    values.push(table, accountId, wanted);
  }
  if (parts.length === 0) return [];
  const { rows } = await db.raw<{ rows: FoundRecord[] }>(`select t as "table", id, sku, price, archived from (${parts.join(' union all ')}) as x(t, id, sku, price, archived)`, values);
  return rows;
}

/** The lookups that find what `references` name. */
export const lookupsOf = (references: Reference[]): Lookup[] => [...new Set(references.map((ref) => ref.table))]
  .map((table) => ({ table, column: 'id', keys: references.filter((ref) => ref.table === table).map((ref) => ref.id) }));

/** One entry per reference not `found` (or found archived, when `active`). */
export function referenceProblems(references: Reference[], found: FoundRecord[]): Problem[] {
  const byKey = new Map(found.map((record) => [`${record.table}:${record.id}`, record]));
  return references.flatMap((ref) => {
    const record = byKey.get(`${ref.table}:${ref.id}`);
    if (!record) return [{ path: ref.path, message: `no ${LABELS[ref.table]} with this id in your account` }];
    if (ref.active && record.archived) return [{ path: ref.path, message: `is an archived ${LABELS[ref.table]}` }];
    return [];
  });
}

/** One entry per reference the account does not hold (or holds archived, when `active`); one query. */
async function missingReferences(db: Knex, accountId: string, references: Reference[]): Promise<Problem[]> {
  return referenceProblems(references, await findRecords(db, accountId, lookupsOf(references)));
}

/**
 * Where a route's body names records: `locationId`, or `lines[].itemId` for a field of every element of an
 * array. Read from the body as sent, before or despite shape problems, so one 400 names both kinds.
 */
export interface ReferenceField {
  table: Table;
  field: string;
  active?: boolean;
}

/** The references a possibly malformed body makes; values that are not strings are the shape check's to report. */
export function referencesIn(body: unknown, fields: ReferenceField[]): Reference[] {
  if (!isRecord(body)) return [];
  return fields.flatMap(({ table, field, active }) => {
    const [list, inner] = field.split('[].');
    if (inner === undefined) {
      const id = body[field];
      return typeof id === 'string' ? [{ table, id, path: field, active }] : [];
    }
    const elements = body[list!];
    if (!Array.isArray(elements)) return [];
    return elements.flatMap((element, index) => {
      const id = isRecord(element) ? element[inner] : undefined;
      return typeof id === 'string' ? [{ table, id, path: `${list}[${index}].${inner}`, active }] : [];
    });
  });
}

/** A route's `resolve` that checks the records the body names at `fields` (see RouteSpec.resolve). */
export function checkReferences(fields: ReferenceField[]) {
  return async ({ db, auth, body }: { db: Knex; auth: { accountId: string }; body: unknown }): Promise<{ problems: Problem[]; resolved: undefined }> =>
    ({ problems: await missingReferences(db, auth.accountId, referencesIn(body, fields)), resolved: undefined });
}

type Check<Input> = (input: Input) => Promise<{ problems: Problem[]; resolved: undefined }>;

/** Several `resolve` checks as one: every problem of each. */
export function checkAll<Input>(...checks: Array<Check<Input>>): Check<Input> {
  return async (input) => ({ problems: (await Promise.all(checks.map((check) => check(input)))).flatMap((found) => found.problems), resolved: undefined });
}

export interface ItemRef {
  id: string;
  sku: string;
}

/**
 * For the rows of the body's list `list` that name an item by `itemId` or by `sku` (one or the other): each row's
 * item, and a problem for each row that names neither or both, or an item the account does not have. One query,
 * whatever the number of rows.
 */
export async function resolveItemRows(db: Knex, accountId: string, body: unknown, list: string): Promise<{ problems: Problem[]; items: Array<ItemRef | undefined> }> {
  const rows = isRecord(body) && Array.isArray(body[list]) ? body[list] as unknown[] : [];
  const named = rows.map((row) => (isRecord(row) ? { itemId: row.itemId, sku: row.sku } : {}));
  const found = await findRecords(db, accountId, [
    { table: 'items', column: 'id', keys: named.flatMap((row) => (typeof row.itemId === 'string' ? [row.itemId] : [])) },
    { table: 'items', column: 'sku', keys: named.flatMap((row) => (typeof row.sku === 'string' ? [row.sku] : [])) },
  ]).then((records) => records.map((record): ItemRef => ({ id: record.id, sku: record.sku! })));
  const byId = new Map(found.map((item) => [item.id, item]));
  const bySku = new Map(found.map((item) => [item.sku, item]));
  const problems: Problem[] = [];
  const items = named.map((row, index) => {
    if (!isRecord(rows[index])) return undefined;
    if (row.itemId !== undefined && row.sku !== undefined) {
      problems.push({ path: `${list}[${index}].sku`, message: 'send itemId or sku, not both' });
      return undefined;
    }
    if (row.itemId === undefined && row.sku === undefined) {
      problems.push({ path: `${list}[${index}].itemId`, message: 'is required, or sku: name the item by one of them' });
      return undefined;
    }
    const item = typeof row.itemId === 'string' ? byId.get(row.itemId) : typeof row.sku === 'string' ? bySku.get(row.sku) : undefined;
    if (!item && (typeof row.itemId === 'string' || typeof row.sku === 'string')) {
      problems.push(row.itemId !== undefined
        ? { path: `${list}[${index}].itemId`, message: 'no item with this id in your account' }
        : { path: `${list}[${index}].sku`, message: 'no item with this sku in your account' });
    }
    return item;
  });
  return { problems, items };
}

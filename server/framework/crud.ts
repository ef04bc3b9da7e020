// Queries every account-owned table shares. Each takes the account id: no row is read or written without it.
import type { Knex } from 'knex';
import { isUuid } from '../../shared/guards.ts';
import { fetchPage, type PageRequest } from './pagination.ts';
import type { Timestamp } from '../../db/timestamps.ts';

export interface OwnedRow {
  id: string;
  account_id: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** camelCase input fields to snake_case columns; absent (undefined) fields are left out. */
export function toColumns(input: Record<string, unknown>): Record<string, unknown> {
  const columns: Record<string, unknown> = {};
  for (const [field, value] of Object.entries(input)) {
    if (value !== undefined) columns[field.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)] = value;
  }
  return columns;
}

export async function findOwned<Row extends OwnedRow>(db: Knex, table: string, accountId: string, id: string): Promise<Row | undefined> {
  // A malformed id cannot name a record: not found, rather than a database error.
  if (!isUuid(id)) return undefined;
  return db(table).where({ account_id: accountId, id }).first();
}

/**
 * The row, locked until the transaction ends: operations that change a record's state take this first, so two
 * of them racing on one record run one after the other and the second sees the first one's result.
 */
export async function lockOwned<Row extends OwnedRow>(trx: Knex.Transaction, table: string, accountId: string, id: string): Promise<Row | undefined> {
  if (!isUuid(id)) return undefined;
  return trx(table).where({ account_id: accountId, id }).forUpdate().first();
}

/**
 * Inserts and returns the row; with `uniqueBy`, a clash on those columns (`[]`: on any unique constraint) returns
 * undefined instead of raising. A clash with a row not yet committed waits for that transaction to end.
 */
export async function insertOwned<Row extends OwnedRow>(
  db: Knex,
  table: string,
  accountId: string,
  values: Record<string, unknown>,
  uniqueBy?: string[],
): Promise<Row | undefined> {
  const insert = db(table).insert({ ...values, account_id: accountId });
  if (uniqueBy?.length) insert.onConflict(uniqueBy).ignore();
  else if (uniqueBy) insert.onConflict().ignore();
  const [row] = await insert.returning('*');
  return row;
}

/** Updates and returns the row, or undefined when the account has no such record. An empty change touches nothing. */
export async function updateOwned<Row extends OwnedRow>(db: Knex, table: string, accountId: string, id: string, values: Record<string, unknown>): Promise<Row | undefined> {
  if (Object.keys(values).length === 0) return findOwned<Row>(db, table, accountId, id);
  if (!isUuid(id)) return undefined;
  const [row] = await db(table)
    .where({ account_id: accountId, id })
    .update({ ...values, updated_at: db.fn.now() })
    .returning('*');
  return row;
}

export async function listOwned<Row extends OwnedRow>(
  db: Knex,
  table: string,
  accountId: string,
  page: PageRequest,
  filter: (query: Knex.QueryBuilder) => void = () => {},
): Promise<Row[]> {
  const query = db(table).where(`${table}.account_id`, accountId).select(`${table}.*`);
  filter(query);
  return fetchPage<Row>(query, table, page);
}

/** A filter on an id column; a malformed id matches nothing rather than raising a database error. */
export function whereId(query: Knex.QueryBuilder, column: string, id: string | undefined): void {
  if (id === undefined) return;
  if (isUuid(id)) query.where(column, id);
  else query.whereRaw('false');
}

/**
 * The parents, each with its child rows under `key`: `children` reads the rows of every parent at once (scoped to
 * the account, in the order they belong in), so a page of records costs one query more, whatever its size.
 */
export async function withChildren<Parent extends { id: string }, Child, Key extends string>(
  parents: Parent[],
  key: Key,
  children: (parentIds: string[]) => Promise<Child[]>,
  parentId: (child: Child) => string,
): Promise<Array<Parent & Record<Key, Child[]>>> {
  if (parents.length === 0) return [];
  const byParent = new Map<string, Child[]>(parents.map((parent) => [parent.id, []]));
  for (const child of await children(parents.map((parent) => parent.id))) byParent.get(parentId(child))?.push(child);
  return parents.map((parent) => ({ ...parent, [key]: byParent.get(parent.id)! }) as Parent & Record<Key, Child[]>);
}

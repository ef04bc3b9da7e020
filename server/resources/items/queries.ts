import type { Knex } from 'knex';
import { ConflictError, ValidationError } from '../../../shared/errors.ts';
import { findOwned, insertOwned, listOwned, toColumns, updateOwned, type OwnedRow } from '../../framework/crud.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import type { CreateItem, Item, ItemBatchRow, ItemListQuery, UpdateItem } from './schema.ts';
import type { Timestamp } from '../../../db/timestamps.ts';

export interface ItemRow extends OwnedRow {
  sku: string;
  name: string;
  description: string | null;
  unit: string;
  price: number | null;
  cost: number | null;
  barcode: string | null;
  archived_at: Timestamp | null;
}

export function toItem(row: ItemRow): Item {
  return {
    id: row.id,
    sku: row.sku,
    name: row.name,
    description: row.description,
    unit: row.unit,
    price: row.price,
    cost: row.cost,
    barcode: row.barcode,
    archived: row.archived_at !== null,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

async function duplicateSku(db: Knex, accountId: string, sku: string): Promise<ConflictError> {
  const existing = await db('items').where({ account_id: accountId, sku }).first('id');
  return new ConflictError(`An item with sku "${sku}" already exists`, { sku, existingId: existing?.id });
}

export const findItem = (db: Knex, accountId: string, id: string) => findOwned<ItemRow>(db, 'items', accountId, id);

// Duplicates are found without letting Postgres raise: inside a transaction an error would abort it.
export async function insertItem(db: Knex, accountId: string, input: CreateItem): Promise<ItemRow> {
  const row = await insertOwned<ItemRow>(db, 'items', accountId, toColumns(input), ['account_id', 'sku']);
  if (!row) throw await duplicateSku(db, accountId, input.sku);
  return row;
}

export async function updateItem(db: Knex, accountId: string, id: string, patch: UpdateItem): Promise<ItemRow | undefined> {
  const { archived, ...fields } = patch;
  if (fields.sku !== undefined) {
    const clash = await db('items').where({ account_id: accountId, sku: fields.sku }).whereNot({ id }).first('id');
    if (clash) throw await duplicateSku(db, accountId, fields.sku);
  }
  const values = toColumns(fields);
  if (archived !== undefined) values.archived_at = archived ? db.raw('coalesce(archived_at, now())') : null;
  return updateOwned<ItemRow>(db, 'items', accountId, id, values);
}

export function listItems(db: Knex, accountId: string, filters: ItemListQuery, page: PageRequest): Promise<ItemRow[]> {
  return listOwned<ItemRow>(db, 'items', accountId, page, (query) => {
    if (!filters.includeArchived) query.whereNull('archived_at');
    if (filters.sku !== undefined) query.where('sku', filters.sku);
    if (filters.q !== undefined) {
      const pattern = `%${filters.q.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
      query.where((q) => q.whereILike('name', pattern).orWhereILike('sku', pattern));
    }
  });
}

const BATCH_FIELDS = ['name', 'description', 'unit', 'price', 'cost', 'barcode'] as const;
type BatchField = (typeof BATCH_FIELDS)[number];

export interface UpsertResult {
  rows: ItemRow[];
  created: Set<string>;
  updated: Set<string>;
}

/**
 * Upserts by sku, set-based: the existing items locked (one statement), the new ones inserted (one), the changed ones
 * updated (one), whatever the number of rows. What is sent is compared with what is stored, so an item sent as it
 * already is is left alone. A sku another transaction inserts meanwhile is found locked on the next round and updated.
 * Rows are locked and inserted in sku order, so that two batches sharing skus wait for each other rather than deadlock.
 */
export async function upsertItems(trx: Knex.Transaction, accountId: string, rows: ItemBatchRow[]): Promise<UpsertResult> {
  const placed = new Map<string, ItemRow>();
  const created = new Set<string>();
  const updated = new Set<string>();
  for (let round = 0; placed.size < rows.length; round += 1) {
    if (round === 3) throw new ConflictError('Items of this batch kept being created concurrently; send it again');
    const pending = rows.filter((row) => !placed.has(row.sku));
    const existing: ItemRow[] = await trx('items').where({ account_id: accountId }).whereIn('sku', pending.map((row) => row.sku)).orderBy('sku').forNoKeyUpdate().select('*');
    const bySku = new Map(existing.map((row) => [row.sku, row]));
    const changes: ItemRow[] = [];
    for (const row of pending) {
      const current = bySku.get(row.sku);
      if (!current) continue;
      const given = BATCH_FIELDS.filter((field) => row[field] !== undefined && row[field] !== current[field]);
      if (given.length === 0) placed.set(row.sku, current);
      else changes.push({ ...current, ...Object.fromEntries(given.map((field) => [field, row[field]])) as Partial<Pick<ItemRow, BatchField>> });
    }
    for (const row of await updateRows(trx, changes)) {
      placed.set(row.sku, row);
      updated.add(row.id);
    }
    const fresh = pending.filter((row) => !bySku.has(row.sku));
    for (const row of await insertRows(trx, accountId, fresh)) {
      placed.set(row.sku, row);
      created.add(row.id);
    }
  }
  return { rows: rows.map((row) => placed.get(row.sku)!), created, updated };
}

async function updateRows(trx: Knex.Transaction, rows: ItemRow[]): Promise<ItemRow[]> {
  if (rows.length === 0) return [];
  const column = (value: (row: ItemRow) => unknown) => rows.map((row) => { const v = value(row); return v === null ? null : String(v); });
  const { rows: changed } = await trx.raw<{ rows: ItemRow[] }>(
    `update items s set name = u.name, description = u.description, unit = u.unit, price = u.price, cost = u.cost, barcode = u.barcode,
       updated_at = now()
     from unnest(?::uuid[], ?::text[], ?::text[], ?::text[], ?::numeric[], ?::numeric[], ?::text[]) as u(id, name, description, unit, price, cost, barcode)
     where s.id = u.id
     returning s.*`,
    [column((row) => row.id), column((row) => row.name), column((row) => row.description), column((row) => row.unit),
      column((row) => row.price), column((row) => row.cost), column((row) => row.barcode)] as Knex.Value[],
  );
  return changed;
}

async function insertRows(trx: Knex.Transaction, accountId: string, rows: ItemBatchRow[]): Promise<ItemRow[]> {
  if (rows.length === 0) return [];
  const missingName = rows.findIndex((row) => row.name === undefined);
  if (missingName >= 0) throw ValidationError.of('items', `sku "${rows[missingName]!.sku}" is new: it needs a name`);
  const column = (value: (row: ItemBatchRow) => unknown) => rows.map((row) => { const v = value(row); return v === null || v === undefined ? null : String(v); });
  const { rows: inserted } = await trx.raw<{ rows: ItemRow[] }>(
    `insert into items (account_id, sku, name, description, unit, price, cost, barcode)
     select ?::uuid, i.sku, i.name, i.description, coalesce(i.unit, 'pcs'), i.price, i.cost, i.barcode
     from unnest(?::text[], ?::text[], ?::text[], ?::text[], ?::numeric[], ?::numeric[], ?::text[])
       as i(sku, name, description, unit, price, cost, barcode)
     order by i.sku
     on conflict (account_id, sku) do nothing
     returning *`,
    [accountId, column((row) => row.sku), column((row) => row.name), column((row) => row.description), column((row) => row.unit),
      column((row) => row.price), column((row) => row.cost), column((row) => row.barcode)] as Knex.Value[],
  );
  return inserted;
}

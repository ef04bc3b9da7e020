import type { Knex } from 'knex';
import { ConflictError } from '../../../shared/errors.ts';
import { findOwned, insertOwned, listOwned, toColumns, updateOwned, type OwnedRow } from '../../framework/crud.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import type { CreateItem, Item, ItemListQuery, UpdateItem } from './schema.ts';
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

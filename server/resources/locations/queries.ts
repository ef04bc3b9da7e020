import type { Knex } from 'knex';
import { ConflictError } from '../../../shared/errors.ts';
import { findOwned, insertOwned, listOwned, toColumns, updateOwned, type OwnedRow } from '../../framework/crud.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import type { CreateLocation, Location, LocationListQuery, UpdateLocation } from './schema.ts';

export interface LocationRow extends OwnedRow {
  name: string;
  code: string | null;
  address: string | null;
}

export function toLocation(row: LocationRow): Location {
  return {
    id: row.id,
    name: row.name,
    code: row.code,
    address: row.address,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

async function duplicateCode(db: Knex, accountId: string, code: string): Promise<ConflictError> {
  const existing = await db('locations').where({ account_id: accountId, code }).first('id');
  return new ConflictError(`A location with code "${code}" already exists`, { code, existingId: existing?.id });
}

export const findLocation = (db: Knex, accountId: string, id: string) => findOwned<LocationRow>(db, 'locations', accountId, id);

export async function insertLocation(db: Knex, accountId: string, input: CreateLocation): Promise<LocationRow> {
  const row = await insertOwned<LocationRow>(db, 'locations', accountId, toColumns(input), ['account_id', 'code']);
  if (!row) throw await duplicateCode(db, accountId, input.code ?? '');
  return row;
}

export async function updateLocation(db: Knex, accountId: string, id: string, patch: UpdateLocation): Promise<LocationRow | undefined> {
  if (patch.code) {
    const clash = await db('locations').where({ account_id: accountId, code: patch.code }).whereNot({ id }).first('id');
    if (clash) throw await duplicateCode(db, accountId, patch.code);
  }
  return updateOwned<LocationRow>(db, 'locations', accountId, id, toColumns(patch));
}

export function listLocations(db: Knex, accountId: string, filters: LocationListQuery, page: PageRequest): Promise<LocationRow[]> {
  return listOwned<LocationRow>(db, 'locations', accountId, page, (query) => {
    if (filters.code !== undefined) query.where('code', filters.code);
  });
}

import type { Knex } from 'knex';
import { findOwned, insertOwned, listOwned, toColumns, updateOwned, type OwnedRow } from '../../framework/crud.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import type { CreateCustomer, Customer, CustomerListQuery, UpdateCustomer } from './schema.ts';

export interface CustomerRow extends OwnedRow {
  name: string;
  email: string | null;
  phone: string | null;
  external_id: string | null;
}

export function toCustomer(row: CustomerRow): Customer {
  return {
    id: row.id,
    name: row.name,
    email: row.email,
    phone: row.phone,
    externalId: row.external_id,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export const findCustomer = (db: Knex, accountId: string, id: string) => findOwned<CustomerRow>(db, 'customers', accountId, id);

export async function insertCustomer(db: Knex, accountId: string, input: CreateCustomer): Promise<CustomerRow> {
  const row = await insertOwned<CustomerRow>(db, 'customers', accountId, toColumns(input));
  if (!row) throw new Error('insertCustomer: insert returned no row');
  return row;
}

export function updateCustomer(db: Knex, accountId: string, id: string, patch: UpdateCustomer): Promise<CustomerRow | undefined> {
  return updateOwned<CustomerRow>(db, 'customers', accountId, id, toColumns(patch));
}

export function listCustomers(db: Knex, accountId: string, filters: CustomerListQuery, page: PageRequest): Promise<CustomerRow[]> {
  return listOwned<CustomerRow>(db, 'customers', accountId, page, (query) => {
    if (filters.externalId !== undefined) query.where('external_id', filters.externalId);
    if (filters.email !== undefined) query.whereRaw('lower(email) = lower(?)', [filters.email]);
  });
}

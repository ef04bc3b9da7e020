import type { Knex } from 'knex';
import { findOwned, listOwned, whereId, withChildren, type OwnedRow } from '../../framework/crud.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import type { CreateProductionRecord, ProductionRecord, ProductionRecordListQuery } from './schema.ts';

export interface ProductionRecordRow extends OwnedRow {
  item_id: string;
  location_id: string;
  quantity: number;
  reference: string | null;
  created_by: string;
}

interface ComponentRow {
  production_record_id: string;
  position: number;
  item_id: string;
  quantity: number;
}

export type ProductionRecordWithComponents = ProductionRecordRow & { components: ComponentRow[] };

export function toProductionRecord(row: ProductionRecordWithComponents): ProductionRecord {
  return {
    id: row.id,
    itemId: row.item_id,
    locationId: row.location_id,
    quantity: row.quantity,
    components: row.components.map((component) => ({ itemId: component.item_id, quantity: component.quantity })),
    reference: row.reference,
    createdBy: row.created_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The components of every record given, in one query whatever their number. */
function withComponents(db: Knex, accountId: string, records: ProductionRecordRow[]): Promise<ProductionRecordWithComponents[]> {
  // Components carry no account of their own: the join keeps the read scoped to the account all the same.
  return withChildren(records, 'components', (ids): Promise<ComponentRow[]> => db('production_record_components as c')
    .join('production_records as r', 'r.id', 'c.production_record_id')
    .where('r.account_id', accountId)
    .whereIn('c.production_record_id', ids)
    .orderBy([{ column: 'c.production_record_id' }, { column: 'c.position' }])
    .select('c.*'),
  (component) => component.production_record_id);
}

export async function insertProductionRecord(
  trx: Knex.Transaction,
  accountId: string,
  values: CreateProductionRecord & { id: string; createdBy: string },
): Promise<ProductionRecordWithComponents> {
  const [record]: ProductionRecordRow[] = await trx('production_records').insert({
    id: values.id,
    account_id: accountId,
    item_id: values.itemId,
    location_id: values.locationId,
    quantity: String(values.quantity),
    reference: values.reference ?? null,
    created_by: values.createdBy,
  }).returning('*');
  const components: ComponentRow[] = await trx('production_record_components').insert(values.components.map((component, position) => ({
    production_record_id: values.id,
    position,
    item_id: component.itemId,
    quantity: String(component.quantity),
  }))).returning('*');
  return { ...record!, components: components.sort((a, b) => a.position - b.position) };
}

export async function findProductionRecord(db: Knex, accountId: string, id: string): Promise<ProductionRecordWithComponents | undefined> {
  const record = await findOwned<ProductionRecordRow>(db, 'production_records', accountId, id);
  return record && (await withComponents(db, accountId, [record]))[0];
}

export async function listProductionRecords(
  db: Knex,
  accountId: string,
  filters: ProductionRecordListQuery,
  page: PageRequest,
): Promise<ProductionRecordWithComponents[]> {
  const records = await listOwned<ProductionRecordRow>(db, 'production_records', accountId, page, (query) => {
    whereId(query, 'item_id', filters.itemId);
  });
  return withComponents(db, accountId, records);
}

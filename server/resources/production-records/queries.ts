import type { Knex } from 'knex';
import { findOwned, listOwned, whereId, withChildren, type OwnedRow } from '../../framework/crud.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import type { StockStatementExtension } from '../../../db/stock.ts';
import { filledJson, type Statement } from '../../../db/statement.ts';
import { isoTimestampSql } from '../../../db/timestamps.ts';
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

/**
 * The record and its components in its stock statement (moveStock's, with the movements whose source it is), and its
 * `production_record.created` event: `record` as the API answers it, `now` standing for its createdAt and updatedAt.
 * It comes back as `record`.
 */
export function productionRecordCtes(q: Statement, accountId: string, values: CreateProductionRecord & { id: string; createdBy: string }, record: ProductionRecord, now: string): StockStatementExtension {
  const data = filledJson(q, record, { [now]: isoTimestampSql('(select created_at from pr)') });
  return {
    ctes: [
      `pr as (insert into production_records (id, account_id, item_id, location_id, quantity, reference, created_by)
         select ${q.param(values.id, 'uuid')}, ${q.param(accountId, 'uuid')}, ${q.param(values.itemId, 'uuid')}, ${q.param(values.locationId, 'uuid')},
           ${q.param(String(values.quantity), 'numeric')}, ${q.param(values.reference ?? null, 'text')}, ${q.param(values.createdBy, 'uuid')}
         where not exists (select 1 from refused)
         returning id, created_at)`,
      `prc as (insert into production_record_components (production_record_id, position, item_id, quantity)
         select pr.id, c.n - 1, c.item_id, c.quantity
         from pr, unnest(${q.column(values.components, (component) => component.itemId, 'uuid')},
           ${q.column(values.components, (component) => String(component.quantity), 'numeric')}) with ordinality as c(item_id, quantity, n))`,
    ],
    events: `select 'production_record.created' as type, ${data} as data, 1 as n from pr`,
    columns: [`${data} as record`],
  };
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

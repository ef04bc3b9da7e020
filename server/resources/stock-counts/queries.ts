import type { Knex } from 'knex';
import { snapshot, type CountedLine, type CountLine, type StockStatementExtension } from '../../../db/stock.ts';
import type { Statement } from '../../../db/statement.ts';
import { isoTimestampSql, type Timestamp } from '../../../db/timestamps.ts';
import { findOwned, listOwned, whereId, withChildren, type OwnedRow } from '../../framework/crud.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import type { StockCount, StockCountListQuery } from './schema.ts';

export interface StockCountRow extends OwnedRow {
  location_id: string;
  reason: string | null;
  created_by: string;
}

interface StockCountLineRow {
  count_id: string;
  item_id: string;
  sku: string;
  counted_quantity: number;
  previous_quantity: number;
  difference: number;
  level_after: number;
  reserved_after: number;
  incoming_after: number;
}

export type StockCountWithLines = StockCountRow & { lines: StockCountLineRow[] };

export function toStockCount(row: StockCountWithLines): StockCount {
  return {
    id: row.id,
    locationId: row.location_id,
    reason: row.reason,
    lines: row.lines.map((line) => ({
      itemId: line.item_id,
      sku: line.sku,
      countedQuantity: line.counted_quantity,
      previousQuantity: line.previous_quantity,
      difference: line.difference,
      stockLevel: snapshot({ quantity: line.level_after, reserved: line.reserved_after, incoming: line.incoming_after }),
    })),
    createdBy: row.created_by,
    createdAt: row.created_at,
  };
}

function withLines(db: Knex, accountId: string, counts: StockCountRow[]): Promise<StockCountWithLines[]> {
  return withChildren(counts, 'lines', (ids): Promise<StockCountLineRow[]> =>
    db('stock_count_lines').where({ account_id: accountId }).whereIn('count_id', ids).orderBy(['count_id', 'position']),
  (line) => line.count_id);
}

export async function findStockCount(db: Knex, accountId: string, id: string): Promise<StockCountWithLines | undefined> {
  const row = await findOwned<StockCountRow>(db, 'stock_counts', accountId, id);
  return row && (await withLines(db, accountId, [row]))[0];
}

export async function listStockCounts(db: Knex, accountId: string, filters: StockCountListQuery, page: PageRequest): Promise<StockCountWithLines[]> {
  const rows = await listOwned<StockCountRow>(db, 'stock_counts', accountId, page, (query) => whereId(query, 'location_id', filters.locationId));
  return withLines(db, accountId, rows);
}

/** The count and its lines, in a count's statement (countStock): each line with the level it left (`lv`); its `createdAt` comes back as `created_at`. */
export function stockCountCtes(
  q: Statement,
  accountId: string,
  count: { id: string; locationId: string; reason: string | null; userId: string },
  lines: Array<CountLine & { previous: number; difference: number; sku: string }>,
): StockStatementExtension {
  const a = q.param(accountId, 'uuid');
  return {
    ctes: [
      `sc as (insert into stock_counts (id, account_id, location_id, reason, created_by)
         select ${q.param(count.id, 'uuid')}, ${a}, ${q.param(count.locationId, 'uuid')}, ${q.param(count.reason, 'text')}, ${q.param(count.userId, 'uuid')}
         where not exists (select 1 from refused)
         returning id, created_at)`,
      `scl as (insert into stock_count_lines (account_id, count_id, position, item_id, sku, counted_quantity, previous_quantity, difference,
         level_after, reserved_after, incoming_after)
       select ${a}, sc.id, p.n - 1, p.item_id, p.sku, p.counted, p.previous, p.difference, l.quantity, l.reserved, l.incoming
       from sc, unnest(${q.column(lines, (line) => line.itemId, 'uuid')}, ${q.column(lines, (line) => line.sku, 'text')},
         ${q.column(lines, (line) => String(line.counted), 'numeric')}, ${q.column(lines, (line) => String(line.previous), 'numeric')},
         ${q.column(lines, (line) => String(line.difference), 'numeric')}) with ordinality as p(item_id, sku, counted, previous, difference, n)
       join lv l on l.item_id = p.item_id and l.location_id = ${q.param(count.locationId, 'uuid')})`,
    ],
    columns: [`(select ${isoTimestampSql('created_at')} from sc) as created_at`],
  };
}

/** The count as stored by stockCountCtes, created at `createdAt`. */
export function countRecord(
  accountId: string,
  count: { id: string; locationId: string; reason: string | null; userId: string },
  lines: Array<CountedLine & { sku: string }>,
  createdAt: Timestamp,
): StockCountWithLines {
  return {
    id: count.id, account_id: accountId, location_id: count.locationId, reason: count.reason, created_by: count.userId,
    created_at: createdAt, updated_at: createdAt,
    lines: lines.map((line) => ({
      count_id: count.id, item_id: line.itemId, sku: line.sku, counted_quantity: line.counted, previous_quantity: line.previous,
      difference: line.difference, level_after: line.level.quantity, reserved_after: line.level.reserved, incoming_after: line.level.incoming,
    })),
  };
}

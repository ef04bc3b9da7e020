import type { Knex } from 'knex';
import { snapshot, type CountedLine } from '../../../db/stock.ts';
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

/** The count and its lines, in one statement. */
export async function insertStockCount(
  trx: Knex.Transaction,
  accountId: string,
  count: { id: string; locationId: string; reason: string | null; userId: string },
  lines: Array<CountedLine & { sku: string }>,
): Promise<StockCountWithLines> {
  const column = <T>(value: (line: CountedLine & { sku: string }) => T) => lines.map(value);
  const { rows: [row] } = await trx.raw<{ rows: StockCountRow[] }>(
    `with c as (
       insert into stock_counts (id, account_id, location_id, reason, created_by) values (?::uuid, ?::uuid, ?::uuid, ?, ?::uuid)
       returning *
     ), l as (
       insert into stock_count_lines (account_id, count_id, position, item_id, sku, counted_quantity, previous_quantity, difference,
         level_after, reserved_after, incoming_after)
       select ?::uuid, c.id, p.n - 1, p.item_id, p.sku, p.counted, p.previous, p.difference, p.level, p.reserved, p.incoming
       from c, unnest(?::uuid[], ?::text[], ?::numeric[], ?::numeric[], ?::numeric[], ?::numeric[], ?::numeric[], ?::numeric[])
         with ordinality as p(item_id, sku, counted, previous, difference, level, reserved, incoming, n)
     )
     select * from c`,
    [
      count.id, accountId, count.locationId, count.reason, count.userId, accountId,
      column((line) => line.itemId), column((line) => line.sku), column((line) => String(line.counted)),
      column((line) => String(line.previous)), column((line) => String(line.difference)), column((line) => String(line.level.quantity)),
      column((line) => String(line.level.reserved)), column((line) => String(line.level.incoming)),
    ] as Knex.Value[],
  );
  return {
    ...row!,
    lines: lines.map((line) => ({
      count_id: count.id, item_id: line.itemId, sku: line.sku, counted_quantity: line.counted, previous_quantity: line.previous,
      difference: line.difference, level_after: line.level.quantity, reserved_after: line.level.reserved, incoming_after: line.level.incoming,
    })),
  };
}

import type { Knex } from 'knex';
import { findOwned, insertOwned, listOwned, whereId, type OwnedRow } from '../../framework/crud.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import { snapshot, type MovementRow } from '../../../db/stock.ts';
import type { LevelSnapshot } from '../../../shared/stock.ts';
import type {
  StockAdjustment, StockAdjustmentListQuery, StockLevel, StockLevelListQuery, StockMovementListQuery, StockTransfer,
  StockTransferListQuery,
} from './schema.ts';

export interface StockLevelRow extends OwnedRow {
  item_id: string;
  location_id: string;
  quantity: number;
  reserved: number;
  incoming: number;
}

export interface AdjustmentRow extends OwnedRow {
  item_id: string;
  location_id: string;
  quantity: number;
  reason: string;
  level_after: number;
  reserved_after: number;
  incoming_after: number;
  created_by: string;
}

export interface TransferRow extends OwnedRow {
  item_id: string;
  from_location_id: string;
  to_location_id: string;
  quantity: number;
  reason: string | null;
  from_level_after: number;
  from_reserved_after: number;
  from_incoming_after: number;
  to_level_after: number;
  to_reserved_after: number;
  to_incoming_after: number;
  created_by: string;
}

export function toStockLevel(row: StockLevelRow): StockLevel {
  return { itemId: row.item_id, locationId: row.location_id, ...snapshot(row), updatedAt: row.updated_at };
}

/** A level snapshot as a record's columns: `<prefix>level_after`, `<prefix>reserved_after`, `<prefix>incoming_after`. */
const snapshotColumns = (level: LevelSnapshot, prefix = '') => ({
  [`${prefix}level_after`]: String(level.quantity),
  [`${prefix}reserved_after`]: String(level.reserved),
  [`${prefix}incoming_after`]: String(level.incoming),
});

type Written<Row> = Omit<Row, 'account_id' | 'created_at' | 'updated_at'>;

export function toAdjustment(row: AdjustmentRow): StockAdjustment {
  return {
    id: row.id,
    itemId: row.item_id,
    locationId: row.location_id,
    quantity: row.quantity,
    reason: row.reason,
    stockLevel: snapshot({ quantity: row.level_after, reserved: row.reserved_after, incoming: row.incoming_after }),
    createdBy: row.created_by,
    createdAt: row.created_at,
  };
}

export function toTransfer(row: TransferRow): StockTransfer {
  return {
    id: row.id,
    itemId: row.item_id,
    fromLocationId: row.from_location_id,
    toLocationId: row.to_location_id,
    quantity: row.quantity,
    reason: row.reason,
    stockLevels: {
      from: snapshot({ quantity: row.from_level_after, reserved: row.from_reserved_after, incoming: row.from_incoming_after }),
      to: snapshot({ quantity: row.to_level_after, reserved: row.to_reserved_after, incoming: row.to_incoming_after }),
    },
    createdBy: row.created_by,
    createdAt: row.created_at,
  };
}

export function listStockLevels(db: Knex, accountId: string, filters: StockLevelListQuery, page: PageRequest): Promise<StockLevelRow[]> {
  return listOwned<StockLevelRow>(db, 'stock_levels', accountId, page, (query) => {
    whereId(query, 'item_id', filters.itemId);
    whereId(query, 'location_id', filters.locationId);
    if (filters.oversold !== undefined) query.whereRaw(filters.oversold ? 'quantity < reserved' : 'quantity >= reserved');
  });
}

export function listStockMovements(db: Knex, accountId: string, filters: StockMovementListQuery, page: PageRequest): Promise<MovementRow[]> {
  return listOwned<MovementRow>(db, 'stock_movements', accountId, page, (query) => {
    whereId(query, 'item_id', filters.itemId);
    whereId(query, 'location_id', filters.locationId);
    if (filters.type !== undefined) query.where('type', filters.type);
  });
}

/** Adjustments, each with the level it left, in one statement whatever their number. */
export async function insertAdjustments(
  db: Knex,
  accountId: string,
  adjustments: Array<{ values: Omit<Written<AdjustmentRow>, 'level_after' | 'reserved_after' | 'incoming_after'>; level: LevelSnapshot }>,
): Promise<AdjustmentRow[]> {
  const column = <T>(value: (entry: (typeof adjustments)[number]) => T) => adjustments.map(value);
  const { rows } = await db.raw<{ rows: AdjustmentRow[] }>(
    `insert into stock_adjustments (account_id, id, item_id, location_id, quantity, reason, created_by, level_after, reserved_after, incoming_after)
     select ?::uuid, a.id, a.item_id, a.location_id, a.quantity, a.reason, a.created_by, a.level_after, a.reserved_after, a.incoming_after
     from unnest(?::uuid[], ?::uuid[], ?::uuid[], ?::numeric[], ?::text[], ?::uuid[], ?::numeric[], ?::numeric[], ?::numeric[]) with ordinality
       as a(id, item_id, location_id, quantity, reason, created_by, level_after, reserved_after, incoming_after, n)
     order by a.n
     returning *`,
    [
      accountId, column((entry) => entry.values.id), column((entry) => entry.values.item_id), column((entry) => entry.values.location_id),
      column((entry) => String(entry.values.quantity)), column((entry) => entry.values.reason), column((entry) => entry.values.created_by),
      column((entry) => String(entry.level.quantity)), column((entry) => String(entry.level.reserved)), column((entry) => String(entry.level.incoming)),
    ] as Knex.Value[],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  return adjustments.map((entry) => byId.get(entry.values.id)!);
}

export const findAdjustment = (db: Knex, accountId: string, id: string) => findOwned<AdjustmentRow>(db, 'stock_adjustments', accountId, id);

export function listAdjustments(db: Knex, accountId: string, filters: StockAdjustmentListQuery, page: PageRequest): Promise<AdjustmentRow[]> {
  return listOwned<AdjustmentRow>(db, 'stock_adjustments', accountId, page, (query) => {
    whereId(query, 'item_id', filters.itemId);
    whereId(query, 'location_id', filters.locationId);
  });
}

export async function insertTransfer(
  db: Knex,
  accountId: string,
  values: Pick<TransferRow, 'id' | 'item_id' | 'from_location_id' | 'to_location_id' | 'quantity' | 'reason' | 'created_by'>,
  levels: { from: LevelSnapshot; to: LevelSnapshot },
): Promise<TransferRow> {
  return (await insertOwned<TransferRow>(db, 'stock_transfers', accountId, {
    ...values, quantity: String(values.quantity), ...snapshotColumns(levels.from, 'from_'), ...snapshotColumns(levels.to, 'to_'),
  }))!;
}

export const findTransfer = (db: Knex, accountId: string, id: string) => findOwned<TransferRow>(db, 'stock_transfers', accountId, id);

export function listTransfers(db: Knex, accountId: string, filters: StockTransferListQuery, page: PageRequest): Promise<TransferRow[]> {
  return listOwned<TransferRow>(db, 'stock_transfers', accountId, page, (query) => {
    whereId(query, 'item_id', filters.itemId);
  });
}

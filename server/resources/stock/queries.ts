import type { Knex } from 'knex';
import type { ApiKeyIdentity } from '../../../db/accounts.ts';
import { rowsJson, type Statement } from '../../../db/statement.ts';
import { findOwned, listOwned, whereId, type OwnedRow } from '../../framework/crud.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import { snapshot, type MovementRow, type StockStatementExtension } from '../../../db/stock.ts';
import type {
  CreateStockAdjustment, CreateStockTransfer, StockAdjustment, StockAdjustmentListQuery, StockLevel, StockLevelListQuery, StockMovementListQuery, StockTransfer,
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

/**
 * Adjustments (`ids[n]` for `rows[n]`), each with the level it left, in the statement of their move (applyStock):
 * the level after the move (`lv`) less what the later rows of that level added.
 */
export function adjustmentCtes(q: Statement, auth: ApiKeyIdentity, ids: string[], rows: CreateStockAdjustment[]): StockStatementExtension {
  const idList = q.param(ids, 'uuid[]');
  return {
    ctes: [`ad as (insert into stock_adjustments (account_id, id, item_id, location_id, quantity, reason, created_by, level_after, reserved_after, incoming_after)
      select ${q.param(auth.accountId, 'uuid')}, a.id, a.item_id, a.location_id, a.quantity, a.reason, ${q.param(auth.userId, 'uuid')},
        l.quantity - coalesce(sum(a.quantity) over (partition by a.item_id, a.location_id order by a.n desc
          rows between unbounded preceding and 1 preceding), 0), l.reserved, l.incoming
      from unnest(${idList}, ${q.column(rows, (row) => row.itemId, 'uuid')}, ${q.column(rows, (row) => row.locationId, 'uuid')},
        ${q.column(rows, (row) => String(row.quantity), 'numeric')}, ${q.column(rows, (row) => row.reason, 'text')}) with ordinality
        as a(id, item_id, location_id, quantity, reason, n)
      join lv l on l.item_id = a.item_id and l.location_id = a.location_id
      returning *)`],
    columns: [`${rowsJson('ad', `array_position(${idList}, x.id)`)} as adjustments`],
  };
}

export const findAdjustment = (db: Knex, accountId: string, id: string) => findOwned<AdjustmentRow>(db, 'stock_adjustments', accountId, id);

export function listAdjustments(db: Knex, accountId: string, filters: StockAdjustmentListQuery, page: PageRequest): Promise<AdjustmentRow[]> {
  return listOwned<AdjustmentRow>(db, 'stock_adjustments', accountId, page, (query) => {
    whereId(query, 'item_id', filters.itemId);
    whereId(query, 'location_id', filters.locationId);
  });
}

/** The transfer `id`, with the levels it left, in the statement of its move (applyStock). */
export function transferCtes(q: Statement, auth: ApiKeyIdentity, id: string, body: CreateStockTransfer): StockStatementExtension {
  return {
    ctes: [`tr as (insert into stock_transfers (account_id, id, item_id, from_location_id, to_location_id, quantity, reason, created_by,
        from_level_after, from_reserved_after, from_incoming_after, to_level_after, to_reserved_after, to_incoming_after)
      select ${q.param(auth.accountId, 'uuid')}, ${q.param(id, 'uuid')}, f.item_id, f.location_id, t.location_id,
        ${q.param(String(body.quantity), 'numeric')}, ${q.param(body.reason ?? null, 'text')}, ${q.param(auth.userId, 'uuid')},
        f.quantity, f.reserved, f.incoming, t.quantity, t.reserved, t.incoming
      from lv f, lv t
      where f.item_id = ${q.param(body.itemId, 'uuid')} and f.location_id = ${q.param(body.fromLocationId, 'uuid')}
        and t.item_id = f.item_id and t.location_id = ${q.param(body.toLocationId, 'uuid')}
      returning *)`],
    columns: [`${rowsJson('tr', 'x.id')} -> 0 as transfer`],
  };
}

export const findTransfer = (db: Knex, accountId: string, id: string) => findOwned<TransferRow>(db, 'stock_transfers', accountId, id);

export function listTransfers(db: Knex, accountId: string, filters: StockTransferListQuery, page: PageRequest): Promise<TransferRow[]> {
  return listOwned<TransferRow>(db, 'stock_transfers', accountId, page, (query) => {
    whereId(query, 'item_id', filters.itemId);
  });
}

// The only way stock changes. Every change is an immutable movement, the level of its item and location moves
// with it in the same transaction, and each movement records a `stock.adjusted` event. Adjustments, transfers,
// purchase receipts, production and sales fulfilment all call moveStock and nothing else.
import type { Knex } from 'knex';
import { recordEvents } from '../../../shared/events.ts';
import { ConflictError } from '../../framework/errors.ts';
import type { MovementType, SourceType, StockAdjustedEvent, StockMovement } from './schema.ts';

export interface StockChange {
  itemId: string;
  locationId: string;
  /** Signed, non-zero. */
  quantity: number;
}

export interface StockMove {
  accountId: string;
  userId: string;
  type: MovementType;
  reason: string | null;
  source: { type: SourceType; id: string };
  changes: StockChange[];
}

export interface MovementRow {
  id: string;
  account_id: string;
  item_id: string;
  location_id: string;
  quantity: number;
  type: MovementType;
  reason: string | null;
  source_type: SourceType;
  source_id: string;
  created_by: string;
  created_at: Date;
  updated_at: Date;
}

export interface AppliedMovement {
  movement: StockMovement;
  /** The level of the movement's item and location once it applied. */
  level: number;
}

export function toMovement(row: MovementRow): StockMovement {
  return {
    id: row.id,
    itemId: row.item_id,
    locationId: row.location_id,
    quantity: row.quantity,
    type: row.type,
    reason: row.reason,
    source: { type: row.source_type, id: row.source_id },
    createdBy: row.created_by,
    createdAt: row.created_at.toISOString(),
  };
}

/**
 * Moves one level, atomically. Additions upsert; removals update only while the result stays at or above zero,
 * so concurrent changes queue on the row lock and none is lost or takes the level negative.
 */
async function applyChange(trx: Knex.Transaction, accountId: string, change: StockChange): Promise<number> {
  const quantity = String(change.quantity);
  if (change.quantity > 0) {
    const { rows } = await trx.raw<{ rows: Array<{ quantity: number }> }>(
      `insert into stock_levels (account_id, item_id, location_id, quantity) values (?::uuid, ?::uuid, ?::uuid, ?::numeric)
       on conflict (account_id, item_id, location_id)
       do update set quantity = stock_levels.quantity + excluded.quantity, updated_at = now()
       returning quantity`,
      [accountId, change.itemId, change.locationId, quantity],
    );
    return rows[0]!.quantity;
  }
  const [updated] = await trx('stock_levels')
    .where({ account_id: accountId, item_id: change.itemId, location_id: change.locationId })
    .whereRaw('quantity + ?::numeric >= 0', [quantity])
    .update({ quantity: trx.raw('quantity + ?::numeric', [quantity]), updated_at: trx.fn.now() })
    .returning('quantity');
  if (updated) return updated.quantity;

  const current = await trx('stock_levels')
    .where({ account_id: accountId, item_id: change.itemId, location_id: change.locationId })
    .first('quantity');
  const available = current?.quantity ?? 0;
  throw new ConflictError(`Insufficient stock: ${available} on hand, ${-change.quantity} needed`, {
    itemId: change.itemId,
    locationId: change.locationId,
    available,
    requested: -change.quantity,
  });
}

function byItemAndLocation(a: StockChange, b: StockChange): number {
  return a.itemId.localeCompare(b.itemId) || a.locationId.localeCompare(b.locationId);
}

/**
 * Applies every change or, by throwing a 409, none (the caller's transaction rolls back). Levels are locked in
 * one global order (item, then location) so that multi-line operations running at once cannot deadlock.
 * Items and locations must already be checked to belong to the account.
 */
export async function moveStock(trx: Knex.Transaction, move: StockMove): Promise<AppliedMovement[]> {
  const levels = new Map<StockChange, number>();
  for (const change of [...move.changes].sort(byItemAndLocation)) {
    levels.set(change, await applyChange(trx, move.accountId, change));
  }

  const rows: MovementRow[] = await trx('stock_movements')
    .insert(move.changes.map((change) => ({
      account_id: move.accountId,
      item_id: change.itemId,
      location_id: change.locationId,
      quantity: String(change.quantity),
      type: move.type,
      reason: move.reason,
      source_type: move.source.type,
      source_id: move.source.id,
      created_by: move.userId,
    })))
    .returning('*');

  const applied = rows.map((row, index) => ({ movement: toMovement(row), level: levels.get(move.changes[index]!)! }));
  await recordEvents(trx, move.accountId, applied.map(({ movement, level }) => ({
    type: 'stock.adjusted' as const,
    data: { ...movement, stockLevel: { quantity: level } } satisfies StockAdjustedEvent,
  })));
  return applied;
}

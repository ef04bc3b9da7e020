// The only way stock changes. Every change is an immutable movement, the level of its item and location moves
// with it in the same transaction, and each movement records a `stock.adjusted` event. Adjustments, transfers,
// purchase receipts, production and sales fulfilment all call moveStock and nothing else.
import type { Knex } from 'knex';
import { recordEvents } from '../../../db/events.ts';
import { fromMicros, toMicros } from '../../../shared/decimal.ts';
import { ConflictError } from '../../framework/errors.ts';
import type { MovementType, SourceType, StockAdjustedEvent, StockMovement } from './schema.ts';
import type { Timestamp } from '../../../db/timestamps.ts';

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
  created_at: Timestamp;
  updated_at: Timestamp;
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
    createdAt: row.created_at,
  };
}

export interface Shortage {
  itemId: string;
  locationId: string;
  available: number;
  requested: number;
}

/**
 * Moves one level by `quantity`, atomically, and returns the new level (a net change of 0 just reads it); a removal that would go below zero
 * changes nothing and returns the shortage. Additions upsert; removals update only while the result stays at or
 * above zero, so concurrent changes queue on the row lock and none is lost or takes the level negative.
 */
async function applyChange(trx: Knex.Transaction, accountId: string, change: StockChange): Promise<number | Shortage> {
  const quantity = String(change.quantity);
  if (change.quantity >= 0) {
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
  return { itemId: change.itemId, locationId: change.locationId, available: current?.quantity ?? 0, requested: -change.quantity };
}

const levelKey = (change: Pick<StockChange, 'itemId' | 'locationId'>) => `${change.itemId}/${change.locationId}`;

/** One level: one statement. */
async function applyOne(trx: Knex.Transaction, accountId: string, change: StockChange): Promise<Map<string, number>> {
  const result = await applyChange(trx, accountId, change);
  if (typeof result !== 'number') throw insufficientStock([result]);
  return new Map([[levelKey(change), result]]);
}

/**
 * Several levels in two statements whatever their number: the first locks every level (creating the missing ones
 * at 0) in the global order, so the shortages are known exactly before anything moves; the second moves them all.
 * Levels created for a removal only exist until the 409 rolls the transaction back.
 */
async function applyMany(trx: Knex.Transaction, accountId: string, changes: StockChange[]): Promise<Map<string, number>> {
  const levelsJson = (list: StockChange[]) => JSON.stringify(list.map((change) => ({
    item_id: change.itemId, location_id: change.locationId, quantity: String(change.quantity),
  })));
  const { rows: locked } = await trx.raw<{ rows: Array<{ item_id: string; location_id: string; quantity: number }> }>(
    `insert into stock_levels (account_id, item_id, location_id, quantity)
     select ?::uuid, c.item_id, c.location_id, 0 from json_to_recordset(?::json) as c(item_id uuid, location_id uuid)
     order by c.item_id, c.location_id
     on conflict (account_id, item_id, location_id) do update set quantity = stock_levels.quantity
     returning item_id, location_id, quantity`,
    [accountId, levelsJson(changes)],
  );
  const current = new Map(locked.map((row) => [levelKey({ itemId: row.item_id, locationId: row.location_id }), row.quantity]));
  const shortages: Shortage[] = [];
  for (const change of changes) {
    const available = current.get(levelKey(change)) ?? 0;
    if (toMicros(available) + toMicros(change.quantity) < 0n) {
      shortages.push({ itemId: change.itemId, locationId: change.locationId, available, requested: -change.quantity });
    }
  }
  if (shortages.length) throw insufficientStock(shortages);

  const moving = changes.filter((change) => change.quantity !== 0);
  if (moving.length === 0) return current;
  const { rows: moved } = await trx.raw<{ rows: Array<{ item_id: string; location_id: string; quantity: number }> }>(
    `update stock_levels s set quantity = s.quantity + c.quantity, updated_at = now()
     from json_to_recordset(?::json) as c(item_id uuid, location_id uuid, quantity numeric)
     where s.account_id = ?::uuid and s.item_id = c.item_id and s.location_id = c.location_id
     returning s.item_id, s.location_id, s.quantity`,
    [levelsJson(moving), accountId],
  );
  for (const row of moved) current.set(levelKey({ itemId: row.item_id, locationId: row.location_id }), row.quantity);
  return current;
}

/** One net change per item and location, in one global order (item, then location). */
function netChanges(changes: StockChange[]): StockChange[] {
  const net = new Map<string, { change: StockChange; micros: bigint }>();
  for (const change of changes) {
    const key = levelKey(change);
    const sum = net.get(key);
    if (sum) sum.micros += toMicros(change.quantity);
    else net.set(key, { change, micros: toMicros(change.quantity) });
  }
  return [...net.values()]
    .map(({ change, micros }) => ({ ...change, quantity: fromMicros(micros) }))
    .sort((a, b) => a.itemId.localeCompare(b.itemId) || a.locationId.localeCompare(b.locationId));
}

function insufficientStock(shortages: Shortage[]): ConflictError {
  const [first] = shortages;
  const message = shortages.length === 1
    ? `Insufficient stock: ${first!.available} on hand, ${first!.requested} needed`
    : `Insufficient stock for ${shortages.length} items: nothing was changed (see \`shortages\`)`;
  // The first shortage stays at the top level for callers that change one level at a time.
  return new ConflictError(message, { ...first, shortages });
}

/**
 * Applies every change or, by throwing one 409 that names every shortage, none (the caller's transaction rolls
 * back). Changes to one item and location are netted first, so several lines of one item are checked against
 * their total. Levels are locked in one global order (item, then location) so that multi-line operations
 * running at once cannot deadlock. Items and locations must already be checked to belong to the account.
 */
export async function moveStock(trx: Knex.Transaction, move: StockMove): Promise<AppliedMovement[]> {
  const net = netChanges(move.changes);
  const levels = net.length === 1 ? await applyOne(trx, move.accountId, net[0]!) : await applyMany(trx, move.accountId, net);

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

  const applied = rows.map((row, index) => ({ movement: toMovement(row), level: levels.get(levelKey(move.changes[index]!))! }));
  await recordEvents(trx, move.accountId, applied.map(({ movement, level }) => ({
    type: 'stock.adjusted' as const,
    data: { ...movement, stockLevel: { quantity: level } } satisfies StockAdjustedEvent,
  })));
  return applied;
}

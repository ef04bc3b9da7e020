// The only way stock changes. Every change is an immutable movement, the level of its item and location moves
// with it in the same transaction, and each movement records a `stock.adjusted` event. Adjustments, transfers,
// purchase receipts, production and sales fulfilment all call moveStock and nothing else.
import type { Knex } from 'knex';
import { recordEvents } from '../../../db/events.ts';
import { fromMicros, MAX_DECIMAL, MAX_MICROS, microsToText, toMicros } from '../../../shared/decimal.ts';
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

/** A change that would take a level past the largest quantity a level holds. */
export interface Overflow {
  itemId: string;
  locationId: string;
  quantity: number;
  added: number;
  maximum: number;
}

/** How the 409 of a change that would pass the maximum reads, for the routes' documentation. */
export const OVERFLOW_CONFLICT = `Or a level would pass ${MAX_DECIMAL}, the most a level holds: \`overflows\` names each `
  + '(`itemId`, `locationId`, `quantity` now, `added`, `maximum`), the first repeated at the top level; nothing was written.';

/** One net change of one level, in exact millionths. */
interface LevelChange {
  itemId: string;
  locationId: string;
  micros: bigint;
}

const levelKey = (change: Pick<StockChange, 'itemId' | 'locationId'>) => `${change.itemId}/${change.locationId}`;

/** What keeps `micros` from being added to a level holding `current`: a shortage, an overflow, or nothing. */
function refusal(change: LevelChange, current: bigint): Shortage | Overflow | undefined {
  const after = current + change.micros;
  const { itemId, locationId } = change;
  if (after < 0n) return { itemId, locationId, available: fromMicros(current), requested: fromMicros(-change.micros) };
  if (after > MAX_MICROS) return { itemId, locationId, quantity: fromMicros(current), added: fromMicros(change.micros), maximum: MAX_DECIMAL };
  return undefined;
}

/**
 * One level in one statement, atomically: a removal updates only while the level stays at or above zero, an
 * addition upserts only while it stays at or below the maximum, so concurrent changes queue on the row lock and
 * none is lost or takes the level out of range. Refused, nothing changed: the level is read to say why.
 */
async function applyOne(trx: Knex.Transaction, accountId: string, change: LevelChange): Promise<Map<string, number>> {
  const quantity = microsToText(change.micros);
  const key = { account_id: accountId, item_id: change.itemId, location_id: change.locationId };
  let applied: Array<{ quantity: number }> = [];
  if (change.micros < 0n) {
    applied = await trx('stock_levels').where(key).whereRaw('quantity + ?::numeric >= 0', [quantity])
      .update({ quantity: trx.raw('quantity + ?::numeric', [quantity]), updated_at: trx.fn.now() })
      .returning('quantity');
  } else if (change.micros <= MAX_MICROS) {
    ({ rows: applied } = await trx.raw<{ rows: Array<{ quantity: number }> }>(
      `insert into stock_levels (account_id, item_id, location_id, quantity) values (?::uuid, ?::uuid, ?::uuid, ?::numeric)
       on conflict (account_id, item_id, location_id)
       do update set quantity = stock_levels.quantity + excluded.quantity, updated_at = now()
       where stock_levels.quantity + excluded.quantity <= ?::numeric
       returning quantity`,
      [accountId, change.itemId, change.locationId, quantity, microsToText(MAX_MICROS)],
    ));
  }
  if (applied[0]) return new Map([[levelKey(change), applied[0].quantity]]);
  const current: { quantity: string } | undefined = await trx('stock_levels').where(key).first(trx.raw('quantity::text as quantity'));
  throw refused([refusal(change, toMicros(current?.quantity ?? '0'))!]);
}

/**
 * Several levels in two statements whatever their number: the first locks every level (creating the missing ones
 * at 0) in the global order and reads it exactly, so every shortage and overflow is known before anything moves;
 * the second moves them all. Levels created for a refused change only exist until the 409 rolls it back.
 */
async function applyMany(trx: Knex.Transaction, accountId: string, changes: LevelChange[]): Promise<Map<string, number>> {
  const levelsJson = (list: LevelChange[]) => JSON.stringify(list.map((change) => ({
    item_id: change.itemId, location_id: change.locationId, quantity: microsToText(change.micros),
  })));
  const { rows: locked } = await trx.raw<{ rows: Array<{ item_id: string; location_id: string; quantity: string }> }>(
    `insert into stock_levels (account_id, item_id, location_id, quantity)
     select ?::uuid, c.item_id, c.location_id, 0 from json_to_recordset(?::json) as c(item_id uuid, location_id uuid)
     order by c.item_id, c.location_id
     on conflict (account_id, item_id, location_id) do update set quantity = stock_levels.quantity
     returning item_id, location_id, quantity::text as quantity`,
    [accountId, levelsJson(changes)],
  );
  const current = new Map(locked.map((row) => [levelKey({ itemId: row.item_id, locationId: row.location_id }), toMicros(row.quantity)]));
  const refusals = changes.flatMap((change) => refusal(change, current.get(levelKey(change)) ?? 0n) ?? []);
  if (refusals.length) throw refused(refusals);

  const levels = new Map([...current].map(([key, micros]) => [key, fromMicros(micros)]));
  const moving = changes.filter((change) => change.micros !== 0n);
  if (moving.length === 0) return levels;
  const { rows: moved } = await trx.raw<{ rows: Array<{ item_id: string; location_id: string; quantity: number }> }>(
    `update stock_levels s set quantity = s.quantity + c.quantity, updated_at = now()
     from json_to_recordset(?::json) as c(item_id uuid, location_id uuid, quantity numeric)
     where s.account_id = ?::uuid and s.item_id = c.item_id and s.location_id = c.location_id
     returning s.item_id, s.location_id, s.quantity`,
    [levelsJson(moving), accountId],
  );
  for (const row of moved) levels.set(levelKey({ itemId: row.item_id, locationId: row.location_id }), row.quantity);
  return levels;
}

/** One net change per item and location, summed exactly, in one global order (item, then location). */
function netChanges(changes: StockChange[]): LevelChange[] {
  const net = new Map<string, LevelChange>();
  for (const change of changes) {
    const key = levelKey(change);
    const sum = net.get(key);
    if (sum) sum.micros += toMicros(change.quantity);
    else net.set(key, { itemId: change.itemId, locationId: change.locationId, micros: toMicros(change.quantity) });
  }
  return [...net.values()].sort((a, b) => a.itemId.localeCompare(b.itemId) || a.locationId.localeCompare(b.locationId));
}

/**
 * One 409 naming every refused level: the shortages when there are any (`shortages`, the first repeated at the top
 * level for callers that change one level at a time), else the levels that would pass the maximum (`overflows`).
 */
function refused(refusals: Array<Shortage | Overflow>): ConflictError {
  const shortages = refusals.filter((entry): entry is Shortage => 'available' in entry);
  if (shortages.length) {
    const [first] = shortages;
    const message = shortages.length === 1
      ? `Insufficient stock: ${first!.available} on hand, ${first!.requested} needed`
      : `Insufficient stock for ${shortages.length} items: nothing was changed (see \`shortages\`)`;
    return new ConflictError(message, { ...first, shortages });
  }
  const overflows = refusals as Overflow[];
  const [first] = overflows;
  const message = overflows.length === 1
    ? `A stock level holds at most ${MAX_DECIMAL}: item ${first!.itemId} at location ${first!.locationId} holds ${first!.quantity}, adding ${first!.added} would pass it`
    : `${overflows.length} stock levels would pass the most a level holds, ${MAX_DECIMAL}: nothing was changed (see \`overflows\`)`;
  return new ConflictError(message, { ...first, overflows });
}

/**
 * Applies every change or, by throwing one 409 that names every shortage (or every level that would pass the
 * maximum), none (the caller's transaction rolls back). Changes to one item and location are netted first, so several lines of one item are checked against
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

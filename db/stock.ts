// Stock: the only writer of stock levels, movements and reservations. Every change of stock, whatever caused it
// (adjustments, transfers, receipts, production, fulfilment), every reservation made or closed and every change
// of what is expected goes through applyStock (or changeStock, which records its events too), in the caller's
// transaction:
//
// 1. the reservations it closes are locked by the caller first (lockReservations), then the levels it touches, in
//    one global order (item, then location), so that operations running at once cannot deadlock;
// 2. every check runs on exact millionths before anything moves: no level below zero or past the maximum, and
//    reserved stock taken only by what it was reserved for (a physical loss aside); one 409 names every refusal;
// 3. the levels, the ledger, the reservations, and their events (with the level after), then.
//
// A level's `reserved` is kept in its row, under its lock, equal to the sum of its open reservations: both change
// here and only here, in one transaction (npm run check:consistency verifies it).
import type { Knex } from 'knex';
import { fromMicros, MAX_DECIMAL, MAX_MICROS, microsToText, toMicros } from '../shared/decimal.ts';
import { ConflictError } from '../shared/errors.ts';
import type { JobSpec, NewEvent } from '../shared/events.ts';
import {
  expiryJob, type LevelSnapshot, type MovementRecord, type MovementType, type ReleaseReason, type ReservationRecord,
  type ReservationStatus, type SourceType,
} from '../shared/stock.ts';
import { recordEvents } from './events.ts';
import type { Timestamp } from './timestamps.ts';

export interface StockChange {
  itemId: string;
  locationId: string;
  /** Signed, non-zero. */
  quantity: number;
  /**
   * A removal that records a physical loss (a negative adjustment, a count): it may take reserved stock and leave
   * the level oversold. Any other removal takes only what is available.
   */
  physical?: boolean;
  /** The record this change belongs to, when a move's changes belong to several (a batch); else the move's. */
  source?: { type: SourceType; id: string };
  /** Its own reason, when a move's changes have several; else the move's. */
  reason?: string | null;
}

export interface StockMove {
  type: MovementType;
  reason: string | null;
  source: { type: SourceType; id: string };
  changes: StockChange[];
}

export type ReservationSource = { type: 'manual' } | { type: 'sales_order'; id: string; lineItemId: string };

export interface NewReservation {
  itemId: string;
  locationId: string;
  quantity: number;
  source: ReservationSource;
  reference?: string | null;
  expiresAt?: string | null;
}

/** An open reservation to close, wholly or in part: consumed by a fulfilment, or released. */
export interface ClosingReservation {
  row: ReservationRow;
  /** How much of it; the rest stays open. */
  quantity: number;
  as: Exclude<ReservationStatus, 'open'>;
  reason: ReleaseReason;
}

export interface StockOperation {
  accountId: string;
  userId: string;
  move?: StockMove;
  reserve?: NewReservation[];
  close?: ClosingReservation[];
  /** Changes to what is still to be received (signed). */
  expect?: Array<{ itemId: string; locationId: string; quantity: number }>;
}

export interface AppliedMovement {
  movement: MovementRecord;
  /** The level of the movement's item and location once the whole operation applied. */
  level: LevelSnapshot;
}

export interface StockResult {
  movements: AppliedMovement[];
  reserved: ReservationRecord[];
  closed: ReservationRecord[];
  level(itemId: string, locationId: string): LevelSnapshot;
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

export interface ReservationRow {
  id: string;
  account_id: string;
  item_id: string;
  location_id: string;
  quantity: number;
  status: ReservationStatus;
  release_reason: ReleaseReason | null;
  source_type: 'manual' | 'sales_order';
  sales_order_id: string | null;
  sales_order_line_id: string | null;
  reference: string | null;
  expires_at: Timestamp | null;
  created_by: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

export function toMovement(row: MovementRow): MovementRecord {
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

export function toReservation(row: ReservationRow): ReservationRecord {
  return {
    id: row.id,
    itemId: row.item_id,
    locationId: row.location_id,
    quantity: row.quantity,
    status: row.status,
    source: row.source_type === 'sales_order' ? { type: 'sales_order', id: row.sales_order_id!, lineItemId: row.sales_order_line_id! } : { type: 'manual' },
    reference: row.reference,
    expiresAt: row.expires_at,
    releaseReason: row.release_reason,
    createdBy: row.created_by,
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export function snapshot(level: { quantity: number; reserved: number; incoming: number }): LevelSnapshot {
  const available = fromMicros(toMicros(level.quantity) - toMicros(level.reserved));
  return { quantity: level.quantity, reserved: level.reserved, available, incoming: level.incoming, oversold: available < 0 };
}

// --- Levels

export interface Shortage {
  itemId: string;
  locationId: string;
  /** quantity - reserved before the change. */
  available: number;
  reserved: number;
  /** What the change takes: from what is on hand for a physical loss, else from what is available. */
  requested: number;
}

/** A change that would take a level past the largest quantity it holds (on hand, or incoming). */
export interface Overflow {
  itemId: string;
  locationId: string;
  quantity?: number;
  incoming?: number;
  added: number;
  maximum: number;
}

/** How the 409 of a change that would pass the maximum reads, for the routes' documentation. */
export const OVERFLOW_CONFLICT = `Or a level would pass ${MAX_DECIMAL}, the most a level holds: \`overflows\` names each `
  + '(`itemId`, `locationId`, `quantity` now, `added`, `maximum`), the first repeated at the top level; nothing was written.';

/** How the 409 of a short level reads, for the routes' documentation. */
export const SHORTAGE_CONFLICT = 'The change would take a level below zero, or take stock reserved for something else; nothing was written. '
  + '`shortages` names every short level (`itemId`, `locationId`, '
  + '`available`: on hand less reserved, `reserved`, `requested`), the first repeated at the top level. Reserved stock is taken '
  + 'only by what it was reserved for: a negative adjustment (a physical loss) may take it, leaving the level oversold.';

/** One level's change in exact millionths: on hand, reserved, incoming; and whether it takes what is available. */
interface LevelDelta {
  itemId: string;
  locationId: string;
  quantity: bigint;
  /**
   * The lowest and the highest the changes take the quantity on the way, relative to now: changes of one level apply
   * in order (a batch may take a level down, then up), and no step may leave the range.
   */
  low: bigint;
  high: bigint;
  reserved: bigint;
  incoming: bigint;
  takesAvailable: boolean;
  physical: boolean;
}

interface LevelState {
  quantity: bigint;
  reserved: bigint;
  incoming: bigint;
}

const levelKey = (level: { itemId: string; locationId: string }) => `${level.itemId}/${level.locationId}`;

/** What keeps `delta` from applying to a level in state `now`: a shortage, an overflow, or nothing. */
function refusal(delta: LevelDelta, now: LevelState): Shortage | Overflow | undefined {
  const { itemId, locationId } = delta;
  const quantity = now.quantity + delta.quantity;
  const availableBefore = now.quantity - now.reserved;
  const availableAfter = quantity - (now.reserved + delta.reserved);
  const taken = availableBefore - availableAfter;
  if (now.quantity + delta.low < 0n) {
    return { itemId, locationId, available: fromMicros(availableBefore), reserved: fromMicros(now.reserved), requested: fromMicros(-delta.low) };
  }
  // A change that takes from what is available may not leave less than nothing (an oversold level has nothing to give).
  if (delta.takesAvailable && taken > 0n && availableAfter < 0n) {
    return { itemId, locationId, available: fromMicros(availableBefore), reserved: fromMicros(now.reserved), requested: fromMicros(taken) };
  }
  if (now.quantity + delta.high > MAX_MICROS) return { itemId, locationId, quantity: fromMicros(now.quantity), added: fromMicros(delta.high), maximum: MAX_DECIMAL };
  if (now.incoming + delta.incoming > MAX_MICROS) {
    return { itemId, locationId, incoming: fromMicros(now.incoming), added: fromMicros(delta.incoming), maximum: MAX_DECIMAL };
  }
  return undefined;
}

/**
 * One 409 naming every refused level: the shortages when there are any (`shortages`, the first repeated at the top
 * level for callers that change one level at a time), else the levels that would pass the maximum (`overflows`).
 */
function refused(refusals: Array<Shortage | Overflow>): ConflictError {
  const shortages = refusals.filter((entry): entry is Shortage => 'available' in entry);
  if (shortages.length) {
    const [first] = shortages;
    const message = shortages.length > 1
      ? `Insufficient stock for ${shortages.length} items: nothing was changed (see \`shortages\`)`
      : first!.reserved > 0 && first!.requested <= first!.available + first!.reserved
        ? `Insufficient stock: ${first!.available} available (${first!.reserved} more reserved), ${first!.requested} needed`
        : `Insufficient stock: ${fromMicros(toMicros(first!.available) + toMicros(first!.reserved))} on hand, ${first!.requested} needed`;
    return new ConflictError(message, { ...first, shortages });
  }
  const overflows = refusals as Overflow[];
  const [first] = overflows;
  const what = first!.incoming === undefined ? 'A stock level holds' : 'Incoming stock at a level reaches';
  const message = overflows.length === 1
    ? `${what} at most ${MAX_DECIMAL}: item ${first!.itemId} at location ${first!.locationId} holds ${first!.quantity ?? first!.incoming}, adding ${first!.added} would pass it`
    : `${overflows.length} stock levels would pass the most a level holds, ${MAX_DECIMAL}: nothing was changed (see \`overflows\`)`;
  return new ConflictError(message, { ...first, overflows });
}

interface LevelRow {
  item_id: string;
  location_id: string;
  quantity: number;
  reserved: number;
  incoming: number;
}

const levelNumbers = (state: LevelState) =>
  ({ quantity: fromMicros(state.quantity), reserved: fromMicros(state.reserved), incoming: fromMicros(state.incoming) });

const stateOf = (row: { quantity: string; reserved: string; incoming: string }): LevelState =>
  ({ quantity: toMicros(row.quantity), reserved: toMicros(row.reserved), incoming: toMicros(row.incoming) });

/** The checks of refusal(), in SQL, over `s` (the level) and `d` (the delta), for the one-statement path. */
const ACCEPTED = `s.quantity + d.dq >= 0 and s.quantity + d.dq <= ${MAX_DECIMAL} and s.incoming + d.di <= ${MAX_DECIMAL}
  and (not d.takes or (s.quantity - s.reserved) - (s.quantity + d.dq - s.reserved - d.dr) <= 0 or s.quantity + d.dq - s.reserved - d.dr >= 0)`;

/**
 * One level in one statement: it changes only if every check holds, so concurrent changes queue on the row lock and
 * none is lost or takes it out of range. A level that does not exist is created when the change is valid from 0.
 * Refused, nothing changed: the level is read to say why.
 */
async function changeOne(trx: Knex.Transaction, accountId: string, delta: LevelDelta): Promise<Map<string, LevelRow>> {
  const bindings = {
    a: accountId, i: delta.itemId, l: delta.locationId, takes: delta.takesAvailable,
    dq: microsToText(delta.quantity), dr: microsToText(delta.reserved), di: microsToText(delta.incoming),
  };
  // Valid from 0 (a level that does not exist yet): then an upsert, else an update of the level that must exist.
  const fromZero = refusal(delta, { quantity: 0n, reserved: 0n, incoming: 0n }) === undefined && delta.reserved >= 0n;
  const { rows } = await trx.raw<{ rows: LevelRow[] }>(fromZero
    ? `insert into stock_levels as s (account_id, item_id, location_id, quantity, reserved, incoming)
       values (:a::uuid, :i::uuid, :l::uuid, :dq::numeric, :dr::numeric, greatest(:di::numeric, 0))
       on conflict (account_id, item_id, location_id) do update
       set quantity = s.quantity + :dq::numeric, reserved = s.reserved + :dr::numeric,
           incoming = greatest(s.incoming + :di::numeric, 0), updated_at = now()
       where ${ACCEPTED.replaceAll('d.dq', ':dq::numeric').replaceAll('d.dr', ':dr::numeric').replaceAll('d.di', ':di::numeric').replaceAll('d.takes', ':takes::boolean')}
       returning item_id, location_id, quantity, reserved, incoming`
    : `update stock_levels s set quantity = s.quantity + d.dq, reserved = s.reserved + d.dr,
         incoming = greatest(s.incoming + d.di, 0), updated_at = now()
       from (select :dq::numeric as dq, :dr::numeric as dr, :di::numeric as di, :takes::boolean as takes) d
       where s.account_id = :a::uuid and s.item_id = :i::uuid and s.location_id = :l::uuid and ${ACCEPTED}
       returning s.item_id, s.location_id, s.quantity, s.reserved, s.incoming`, bindings);
  if (rows[0]) return new Map([[levelKey(delta), rows[0]]]);
  const current: { quantity: string; reserved: string; incoming: string } | undefined = await trx('stock_levels')
    .where({ account_id: accountId, item_id: delta.itemId, location_id: delta.locationId })
    .first(trx.raw('quantity::text as quantity, reserved::text as reserved, incoming::text as incoming'));
  const why = refusal(delta, current ? stateOf(current) : { quantity: 0n, reserved: 0n, incoming: 0n });
  if (!why) throw new Error(`changeStock: the level of item ${delta.itemId} at location ${delta.locationId} refused a change nothing refuses`);
  throw refused([why]);
}

/** The levels as they stand, read exactly (a missing one is all zeros), to say why a change was refused. */
async function explainRefusals(trx: Knex.Transaction, accountId: string, deltas: LevelDelta[]): Promise<ConflictError> {
  const rows: Array<{ item_id: string; location_id: string; quantity: string; reserved: string; incoming: string }> = await trx('stock_levels')
    .where({ account_id: accountId })
    .whereIn(['item_id', 'location_id'], deltas.map((delta) => [delta.itemId, delta.locationId]))
    .select('item_id', 'location_id', trx.raw('quantity::text as quantity, reserved::text as reserved, incoming::text as incoming'));
  const now = new Map(rows.map((row) => [levelKey({ itemId: row.item_id, locationId: row.location_id }), stateOf(row)]));
  const refusals = deltas.flatMap((delta) => refusal(delta, now.get(levelKey(delta)) ?? { quantity: 0n, reserved: 0n, incoming: 0n }) ?? []);
  if (refusals.length === 0) throw new Error('changeStock: levels refused changes nothing refuses');
  return refused(refusals);
}

const deltaColumns = (deltas: LevelDelta[]) => [
  deltas.map((delta) => delta.itemId), deltas.map((delta) => delta.locationId),
  deltas.map((delta) => microsToText(delta.quantity)), deltas.map((delta) => microsToText(delta.reserved)),
  deltas.map((delta) => microsToText(delta.incoming)), deltas.map((delta) => delta.takesAvailable),
];

/** At most this many levels go through changeExisting's one statement; more take changeMany's two. */
const EXISTING_AT_ONCE = 50;

/**
 * The deltas (`d`, from unnest of deltaColumns) and their levels locked in the global order (`l`), whatever plan the
 * statement gets: an update joined to the deltas locks rows in the order its plan meets them, which changes with
 * the table's size and statistics, and two statements planned differently would deadlock. Every row the statement
 * updates comes through `l`, which locks it first.
 */
const LOCKED_DELTAS = `d as (
    select * from unnest(?::uuid[], ?::uuid[], ?::numeric[], ?::numeric[], ?::numeric[], ?::boolean[]) as d(item_id, location_id, dq, dr, di, takes)
  ), l as (
    select s.id from stock_levels s join d on s.item_id = d.item_id and s.location_id = d.location_id
    where s.account_id = ?::uuid order by s.item_id, s.location_id for update of s
  )`;

/** The update of the levels in `l` by `d`, each only if every check holds. */
const UPDATE_LOCKED = `update stock_levels s set quantity = s.quantity + d.dq, reserved = s.reserved + d.dr,
    incoming = greatest(s.incoming + d.di, 0), updated_at = now()
  from l, d
  where s.id = l.id and s.item_id = d.item_id and s.location_id = d.location_id and ${ACCEPTED}
  returning s.item_id, s.location_id, s.quantity, s.reserved, s.incoming`;

/**
 * A few levels that must all exist already (nothing is added to them: removals, reservations and their release),
 * in one statement: each changes only if every check holds. A level missing from the answer was refused: the 409
 * says why, after reading them.
 */
async function changeExisting(trx: Knex.Transaction, accountId: string, deltas: LevelDelta[]): Promise<Map<string, LevelRow>> {
  const { rows } = await trx.raw<{ rows: LevelRow[] }>(`with ${LOCKED_DELTAS} ${UPDATE_LOCKED}`, [...deltaColumns(deltas), accountId] as Knex.Value[]);
  if (rows.length < deltas.length) throw await explainRefusals(trx, accountId, deltas);
  return new Map(rows.map((row) => [levelKey({ itemId: row.item_id, locationId: row.location_id }), row]));
}

/**
 * Reservations alone, on levels that exist: the levels and the reservation rows in one statement (a create of a
 * reserving sales order spends its time in round trips). The rows are inserted only if every level passed.
 */
async function reserveExisting(trx: Knex.Transaction, op: StockOperation, deltas: LevelDelta[]): Promise<{ levels: Map<string, LevelRow>; reserved: ReservationRow[] }> {
  const reserve = op.reserve!;
  const { rows } = await trx.raw<{ rows: Array<ReservationRow & { level_quantity: number; level_reserved: number; level_incoming: number }> }>(
    `with ${LOCKED_DELTAS}, lv as (${UPDATE_LOCKED}), rs as (
       insert into reservations (account_id, item_id, location_id, quantity, source_type, sales_order_id, sales_order_line_id,
         reference, expires_at, created_by)
       select ?::uuid, r.item_id, r.location_id, r.quantity, r.source_type, r.sales_order_id, r.sales_order_line_id, r.reference,
         r.expires_at, ?::uuid
       from unnest(?::uuid[], ?::uuid[], ?::numeric[], ?::text[], ?::uuid[], ?::uuid[], ?::text[], ?::timestamptz[]) with ordinality
         as r(item_id, location_id, quantity, source_type, sales_order_id, sales_order_line_id, reference, expires_at, n)
       where (select count(*) from lv) = ?
       order by r.n
       returning *
     )
     select rs.*, lv.quantity as level_quantity, lv.reserved as level_reserved, lv.incoming as level_incoming
     from rs join lv using (item_id, location_id)`,
    [
      ...deltaColumns(deltas), op.accountId, op.accountId, op.userId,
      reserve.map((r) => r.itemId), reserve.map((r) => r.locationId), reserve.map((r) => String(r.quantity)),
      reserve.map((r) => r.source.type), reserve.map((r) => (r.source.type === 'sales_order' ? r.source.id : null)),
      reserve.map((r) => (r.source.type === 'sales_order' ? r.source.lineItemId : null)),
      reserve.map((r) => r.reference ?? null), reserve.map((r) => r.expiresAt ?? null), deltas.length,
    ] as Knex.Value[],
  );
  if (rows.length < reserve.length) throw await explainRefusals(trx, op.accountId, deltas);
  // In the order asked for: a sales order's lines, say.
  const position = (row: ReservationRow) => reserve.findIndex((r) => r.itemId === row.item_id && r.locationId === row.location_id
    && (r.source.type === 'manual' || r.source.lineItemId === row.sales_order_line_id));
  rows.sort((a, b) => position(a) - position(b));
  const levels = new Map<string, LevelRow>();
  const reserved = rows.map(({ level_quantity: quantity, level_reserved: reservedNow, level_incoming: incoming, ...row }) => {
    levels.set(levelKey({ itemId: row.item_id, locationId: row.location_id }), { item_id: row.item_id, location_id: row.location_id, quantity, reserved: reservedNow, incoming });
    return row;
  });
  return { levels, reserved };
}

/**
 * Locks the levels of `keys` until the transaction ends, creating the missing ones at 0, in the global order, and
 * reads them exactly: one statement whatever their number.
 */
async function lockLevels(trx: Knex.Transaction, accountId: string, keys: Array<{ itemId: string; locationId: string }>): Promise<Map<string, LevelState>> {
  const unique = [...new Map(keys.map((key) => [levelKey(key), key])).values()];
  const { rows } = await trx.raw<{ rows: Array<{ item_id: string; location_id: string; quantity: string; reserved: string; incoming: string }> }>(
    `insert into stock_levels (account_id, item_id, location_id)
     select ?::uuid, c.item_id, c.location_id from unnest(?::uuid[], ?::uuid[]) as c(item_id, location_id)
     order by c.item_id, c.location_id
     on conflict (account_id, item_id, location_id) do update set quantity = stock_levels.quantity
     returning item_id, location_id, quantity::text as quantity, reserved::text as reserved, incoming::text as incoming`,
    [accountId, unique.map((key) => key.itemId), unique.map((key) => key.locationId)] as Knex.Value[],
  );
  return new Map(rows.map((row) => [levelKey({ itemId: row.item_id, locationId: row.location_id }), stateOf(row)]));
}

/**
 * Several levels in two statements whatever their number: the first locks every level (creating the missing ones
 * at 0) in the global order and reads it exactly, so every refusal is known before anything moves; the second
 * changes them all. Levels created for a refused change only exist until the 409 rolls it back.
 */
async function changeMany(trx: Knex.Transaction, accountId: string, deltas: LevelDelta[]): Promise<Map<string, LevelRow>> {
  const now = await lockLevels(trx, accountId, deltas);
  const refusals = deltas.flatMap((delta) => refusal(delta, now.get(levelKey(delta))!) ?? []);
  if (refusals.length) throw refused(refusals);

  const { rows } = await trx.raw<{ rows: LevelRow[] }>(
    `update stock_levels s set quantity = s.quantity + c.dq, reserved = s.reserved + c.dr,
       incoming = greatest(s.incoming + c.di, 0), updated_at = now()
     from json_to_recordset(?::json) as c(item_id uuid, location_id uuid, dq numeric, dr numeric, di numeric)
     where s.account_id = ?::uuid and s.item_id = c.item_id and s.location_id = c.location_id
     returning s.item_id, s.location_id, s.quantity, s.reserved, s.incoming`,
    [JSON.stringify(deltas.map((delta) => ({
      item_id: delta.itemId, location_id: delta.locationId,
      dq: microsToText(delta.quantity), dr: microsToText(delta.reserved), di: microsToText(delta.incoming),
    }))), accountId],
  );
  return new Map(rows.map((row) => [levelKey({ itemId: row.item_id, locationId: row.location_id }), row]));
}

/** The net change of every level an operation touches, summed exactly, in the global order (item, then location). */
function deltasOf(op: StockOperation): LevelDelta[] {
  const deltas = new Map<string, LevelDelta>();
  const at = (itemId: string, locationId: string) => {
    const key = levelKey({ itemId, locationId });
    let delta = deltas.get(key);
    if (!delta) {
      delta = { itemId, locationId, quantity: 0n, low: 0n, high: 0n, reserved: 0n, incoming: 0n, takesAvailable: false, physical: false };
      deltas.set(key, delta);
    }
    return delta;
  };
  for (const change of op.move?.changes ?? []) {
    const delta = at(change.itemId, change.locationId);
    delta.quantity += toMicros(change.quantity);
    if (delta.quantity < delta.low) delta.low = delta.quantity;
    if (delta.quantity > delta.high) delta.high = delta.quantity;
    if (change.quantity < 0 && !change.physical) delta.takesAvailable = true;
  }
  for (const reservation of op.reserve ?? []) {
    const delta = at(reservation.itemId, reservation.locationId);
    delta.reserved += toMicros(reservation.quantity);
    delta.takesAvailable = true;
  }
  for (const closing of op.close ?? []) at(closing.row.item_id, closing.row.location_id).reserved -= toMicros(closing.quantity);
  for (const expected of op.expect ?? []) at(expected.itemId, expected.locationId).incoming += toMicros(expected.quantity);
  return [...deltas.values()].sort((a, b) => a.itemId.localeCompare(b.itemId) || a.locationId.localeCompare(b.locationId));
}

// --- Reservations

/**
 * Open reservations of the account matching `where`, locked until the transaction ends, in id order: taken before
 * the levels they hold (changeStock's order), so that two operations on one reservation run one after the other.
 */
export async function lockReservations(
  trx: Knex.Transaction,
  accountId: string,
  where: (query: Knex.QueryBuilder) => void,
): Promise<ReservationRow[]> {
  const query = trx('reservations').where({ account_id: accountId, status: 'open' }).orderBy('id').forUpdate();
  where(query);
  return query;
}

async function insertReservations(trx: Knex.Transaction, op: StockOperation): Promise<ReservationRow[]> {
  if (!op.reserve?.length) return [];
  return trx('reservations').insert(op.reserve.map((reservation) => ({
    account_id: op.accountId,
    item_id: reservation.itemId,
    location_id: reservation.locationId,
    quantity: String(reservation.quantity),
    source_type: reservation.source.type,
    sales_order_id: reservation.source.type === 'sales_order' ? reservation.source.id : null,
    sales_order_line_id: reservation.source.type === 'sales_order' ? reservation.source.lineItemId : null,
    reference: reservation.reference ?? null,
    expires_at: reservation.expiresAt ?? null,
    created_by: op.userId,
  }))).returning('*');
}

/**
 * Closes reservations, wholly or in parts (a fulfilment may consume part of one and release the rest). A part
 * splits off as a closed reservation of its own, with the same source, the rest staying open under its id; the
 * last part of a reservation closed in full is the reservation itself, under its id.
 */
async function closeReservations(trx: Knex.Transaction, closing: ClosingReservation[]): Promise<ReservationRow[]> {
  if (closing.length === 0) return [];
  const byRow = new Map<string, ClosingReservation[]>();
  for (const entry of closing) byRow.set(entry.row.id, [...byRow.get(entry.row.id) ?? [], entry]);
  const finals: ClosingReservation[] = [];
  const splits: ClosingReservation[] = [];
  const reduced: Array<{ id: string; quantity: string }> = [];
  const sum = (entries: ClosingReservation[]) => entries.reduce((total, entry) => total + toMicros(entry.quantity), 0n);
  for (const entries of byRow.values()) {
    const whole = sum(entries) === toMicros(entries[0]!.row.quantity);
    const parts = whole ? entries.slice(0, -1) : entries;
    if (whole) finals.push(entries.at(-1)!);
    splits.push(...parts);
    if (parts.length) reduced.push({ id: entries[0]!.row.id, quantity: microsToText(sum(parts)) });
  }
  const closed: ReservationRow[] = [];
  if (reduced.length) {
    await trx.raw(
      `update reservations r set quantity = r.quantity - c.quantity, updated_at = now()
       from json_to_recordset(?::json) as c(id uuid, quantity numeric) where r.id = c.id and r.status = 'open'`,
      [JSON.stringify(reduced)],
    );
  }
  if (splits.length) {
    closed.push(...await trx('reservations').insert(splits.map(({ row, quantity, as, reason }) => ({
      account_id: row.account_id, item_id: row.item_id, location_id: row.location_id, quantity: String(quantity),
      status: as, release_reason: reason, source_type: row.source_type, sales_order_id: row.sales_order_id,
      sales_order_line_id: row.sales_order_line_id, reference: row.reference, expires_at: row.expires_at, created_by: row.created_by,
    }))).returning('*') as ReservationRow[]);
  }
  if (finals.length) {
    const { rows } = await trx.raw<{ rows: ReservationRow[] }>(
      `update reservations r set status = c.status, release_reason = c.reason, updated_at = now()
       from json_to_recordset(?::json) as c(id uuid, status text, reason text)
       where r.id = c.id and r.status = 'open'
       returning r.*`,
      [JSON.stringify(finals.map((entry) => ({ id: entry.row.id, status: entry.as, reason: entry.reason })))],
    );
    closed.push(...rows);
  }
  return closed;
}

// --- The operation

/** The move's movements, in the order of its changes: one statement of column arrays, whatever their number. */
async function insertMovements(trx: Knex.Transaction, op: StockOperation): Promise<MovementRow[]> {
  const { move } = op;
  if (!move?.changes.length) return [];
  const column = <T>(value: (change: StockChange) => T) => move.changes.map(value);
  const { rows } = await trx.raw<{ rows: MovementRow[] }>(
    `insert into stock_movements (account_id, created_by, type, item_id, location_id, quantity, reason, source_type, source_id)
     select ?::uuid, ?::uuid, ?, m.item_id, m.location_id, m.quantity, m.reason, m.source_type, m.source_id
     from unnest(?::uuid[], ?::uuid[], ?::numeric[], ?::text[], ?::text[], ?::uuid[]) with ordinality
       as m(item_id, location_id, quantity, reason, source_type, source_id, n)
     order by m.n
     returning *`,
    [
      op.accountId, op.userId, move.type, column((change) => change.itemId), column((change) => change.locationId),
      column((change) => String(change.quantity)), column((change) => (change.reason === undefined ? move.reason : change.reason)),
      column((change) => (change.source ?? move.source).type), column((change) => (change.source ?? move.source).id),
    ] as Knex.Value[],
  );
  return rows;
}

/**
 * Applies the whole operation or, by throwing one 409 that names every refused level, none of it (the caller's
 * transaction rolls back). Items and locations must already be checked to belong to the account; reservations to
 * close must have been locked with lockReservations. Answers, beside what it did, its events (`stock.adjusted` for
 * every movement, `reservation.created` / `reservation.released` for every reservation made or closed, each with the
 * level after the whole operation) and the jobs that release reservations when they expire: the caller records
 * them in its transaction, with its own events (changeStock does it at once).
 */
export async function applyStock(trx: Knex.Transaction, op: StockOperation): Promise<StockResult & { events: NewEvent[]; jobs: JobSpec[] }> {
  const deltas = deltasOf(op);
  // A level a batch takes out of its range on the way (and back) is checked step by step, on the levels as read.
  const inOrder = deltas.some((delta) => delta.low < (delta.quantity < 0n ? delta.quantity : 0n) || delta.high > (delta.quantity > 0n ? delta.quantity : 0n));
  const existing = !inOrder && deltas.length > 1 && deltas.length <= EXISTING_AT_ONCE && deltas.every((delta) => delta.quantity <= 0n && delta.incoming <= 0n);
  const reservesOnly = existing && !op.move && !op.close?.length && !op.expect?.length && Boolean(op.reserve?.length);
  const reservedHere = reservesOnly ? await reserveExisting(trx, op, deltas) : undefined;
  const levels = reservedHere?.levels ?? (deltas.length === 0 ? new Map<string, LevelRow>()
    : deltas.length === 1 && !inOrder ? await changeOne(trx, op.accountId, deltas[0]!)
      : existing ? await changeExisting(trx, op.accountId, deltas) : await changeMany(trx, op.accountId, deltas));
  const level = (itemId: string, locationId: string) => snapshot(levels.get(levelKey({ itemId, locationId }))!);

  const movements = (await insertMovements(trx, op)).map((row) => ({ movement: toMovement(row), level: level(row.item_id, row.location_id) }));
  const reserved = (reservedHere?.reserved ?? await insertReservations(trx, op)).map(toReservation);
  const closed = (await closeReservations(trx, op.close ?? [])).map(toReservation);

  const events: NewEvent[] = [
    ...movements.map(({ movement, level: after }) => ({ type: 'stock.adjusted' as const, data: { ...movement, stockLevel: after } })),
    ...reserved.map((reservation) => ({ type: 'reservation.created' as const, data: { ...reservation, stockLevel: level(reservation.itemId, reservation.locationId) } })),
    ...closed.map((reservation) => ({
      type: 'reservation.released' as const,
      data: { ...reservation, reason: reservation.releaseReason, stockLevel: level(reservation.itemId, reservation.locationId) },
    })),
  ];
  const jobs = reserved.flatMap((reservation) => (reservation.expiresAt ? [expiryJob(reservation.id, reservation.expiresAt)] : []));
  return { movements, reserved, closed, level, events, jobs };
}

/** applyStock, its events and jobs recorded at once. */
export async function changeStock(trx: Knex.Transaction, op: StockOperation): Promise<StockResult> {
  const { events, jobs, ...result } = await applyStock(trx, op);
  await recordEvents(trx, op.accountId, events, jobs);
  return result;
}

/** The one way stock moves (a thin form of changeStock for operations that only move stock). */
export async function moveStock(trx: Knex.Transaction, op: { accountId: string; userId: string } & StockMove): Promise<AppliedMovement[]> {
  const { accountId, userId, ...move } = op;
  return (await changeStock(trx, { accountId, userId, move })).movements;
}

export interface CountLine {
  itemId: string;
  locationId: string;
  /** What is there: the level is set to it. */
  counted: number;
  /** What the counter saw before counting: a level that no longer holds it makes the count stale. */
  expected?: number;
}

export interface CountedLine extends CountLine {
  previous: number;
  difference: number;
  level: LevelSnapshot;
}

/** How the 409 of a stale count reads, for the routes' documentation. */
export const STALE_CONFLICT = 'A line\'s `expectedQuantity` is no longer the level\'s `quantity` (it changed since it was read): `stale` names '
  + 'every such line (`itemId`, `expectedQuantity`, `quantity`); nothing was written. Read the levels again and recount or resend.';

/**
 * Sets levels to what was counted: under the levels' locks, each line's difference from what is on hand becomes a
 * `count` movement (none when they are equal), a physical fact that may leave a level oversold. A line whose
 * `expected` is no longer on hand makes the whole count a 409 naming every such line: a compare-and-set, so that a
 * count taken before other changes never silently overwrites them.
 */
export async function countStock(
  trx: Knex.Transaction,
  op: { accountId: string; userId: string; reason: string | null; source: { type: SourceType; id: string }; lines: CountLine[] },
): Promise<CountedLine[]> {
  const now = await lockLevels(trx, op.accountId, op.lines);
  const before = (line: CountLine) => now.get(levelKey(line))!;
  const stale = op.lines
    .filter((line) => line.expected !== undefined && toMicros(line.expected) !== before(line).quantity)
    .map((line) => ({ itemId: line.itemId, locationId: line.locationId, expectedQuantity: line.expected, quantity: fromMicros(before(line).quantity) }));
  if (stale.length) {
    const [first] = stale;
    throw new ConflictError(stale.length === 1
      ? `The count is stale: item ${first!.itemId} was expected at ${first!.expectedQuantity} but is at ${first!.quantity}; nothing was changed`
      : `The count is stale: ${stale.length} lines no longer hold their expectedQuantity; nothing was changed (see \`stale\`)`, { stale });
  }
  const differences = op.lines.map((line) => toMicros(line.counted) - before(line).quantity);
  const result = await changeStock(trx, {
    accountId: op.accountId, userId: op.userId,
    move: {
      type: 'count', reason: op.reason, source: op.source,
      changes: op.lines.flatMap((line, index) => (differences[index] === 0n ? []
        : [{ itemId: line.itemId, locationId: line.locationId, quantity: fromMicros(differences[index]!), physical: true }])),
    },
  });
  return op.lines.map((line, index) => ({
    ...line,
    previous: fromMicros(before(line).quantity),
    difference: fromMicros(differences[index]!),
    level: differences[index] === 0n ? snapshot(levelNumbers(before(line))) : result.level(line.itemId, line.locationId),
  }));
}

/** The levels of these items and locations as they stand (a missing one is all zeros). */
export async function readLevels(db: Knex, accountId: string, keys: Array<{ itemId: string; locationId: string }>): Promise<(itemId: string, locationId: string) => LevelSnapshot> {
  const rows: LevelRow[] = keys.length === 0 ? [] : await db('stock_levels').where({ account_id: accountId })
    .whereIn(['item_id', 'location_id'], keys.map((key) => [key.itemId, key.locationId]))
    .select('item_id', 'location_id', 'quantity', 'reserved', 'incoming');
  const found = new Map(rows.map((row) => [levelKey({ itemId: row.item_id, locationId: row.location_id }), row]));
  return (itemId, locationId) => snapshot(found.get(levelKey({ itemId, locationId })) ?? { quantity: 0, reserved: 0, incoming: 0 });
}

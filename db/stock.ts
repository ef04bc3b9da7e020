// Stock: the only writer of stock levels, movements and reservations. Every change of stock, whatever caused it
// (adjustments, transfers, receipts, production, fulfilment, counts), every reservation made or closed and every
// change of what is expected goes through applyStock, as one statement (a round trip; on its own, a transaction
// too, so a level's lock is held for that statement and no network wait), with the caller's record in it:
//
// 1. the reservations it closes are locked first (by CTEs that the caller's guards read before the levels, as
//    writeOrder's and releaseReservation's do), then the levels it touches, in one global order (item, then
//    location), so that operations running at once cannot deadlock;
// 2. every check runs on the levels as they stand under their locks, in exact numeric, before anything moves: no
//    level below zero or past the maximum, and reserved stock taken only by what it was reserved for (a physical
//    loss aside); a refused level stops the statement (stockroom_refuse), and one 409 names every refusal;
// 3. the levels, the ledger, the reservations, their events (with the level after) and jobs, then.
//
// A level's `reserved` is kept in its row, under its lock, equal to the sum of its open reservations: both change
// here and only here, in one transaction (npm run check:consistency verifies it).
import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { fromMicros, MAX_DECIMAL, MAX_MICROS, microsToText, toMicros } from '../shared/decimal.ts';
import { ConflictError, UnresolvedReferences } from '../shared/errors.ts';
import { isUuid } from '../shared/guards.ts';
import type { JobSpec } from '../shared/events.ts';
import {
  expiryJob, type LevelSnapshot, type MovementRecord, type MovementType, type ReleaseReason, type ReservationRecord,
  type ReservationStatus, type SourceType,
} from '../shared/stock.ts';
import { eventCtes } from './events.ts';
import { runStatement, Statement, stopOf, stopSql } from './statement.ts';
import { isoTimestampSql, type Timestamp } from './timestamps.ts';

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
  /** Levels locked and answered (`level()`) without being changed, created at 0 when missing: those a count found as they were. */
  hold?: Array<{ itemId: string; locationId: string }>;
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

const stateOf = (row: { quantity: string; reserved: string; incoming: string }): LevelState =>
  ({ quantity: toMicros(row.quantity), reserved: toMicros(row.reserved), incoming: toMicros(row.incoming) });

/** The checks of refusal(), in SQL, over `st`: the delta and the level under its lock (`q`, `r`, `i`; 0 when missing). */
const ACCEPTED = `st.q + st.lo >= 0 and st.q + st.hi <= ${MAX_DECIMAL} and st.i + st.di <= ${MAX_DECIMAL}
  and (not st.takes or (st.q - st.r) - (st.q + st.dq - st.r - st.dr) <= 0 or st.q + st.dq - st.r - st.dr >= 0)`;

/** A level the statement refused, as it stood under its lock (stockroom_refuse's DETAIL). */
interface RefusedLevel {
  itemId: string;
  locationId: string;
  quantity: string;
  reserved: string;
  incoming: string;
  /** Whether its item and location belong to the account. */
  known: boolean;
}

/** The 409 (or, for records the account does not hold, UnresolvedReferences) of a statement stockroom_refuse stopped. */
function refusalOf(detail: string, deltas: LevelDelta[]): Error {
  const levels = JSON.parse(detail) as RefusedLevel[];
  if (levels.some((level) => !level.known)) return new UnresolvedReferences();
  const byKey = new Map(deltas.map((delta) => [levelKey(delta), delta]));
  const refusals = levels.flatMap((level) => refusal(byKey.get(levelKey(level))!, stateOf(level)) ?? []);
  if (refusals.length === 0) throw new Error('applyStock: the statement refused changes nothing refuses');
  return refused(refusals);
}

// A level, a movement and a reservation as the API answers them (snapshot, toMovement, toReservation), built by the
// statement for its events and its answer.
const levelJson = (l: string) => `json_build_object('quantity', trim_scale(${l}.quantity), 'reserved', trim_scale(${l}.reserved),
  'available', trim_scale(${l}.quantity - ${l}.reserved), 'incoming', trim_scale(${l}.incoming), 'oversold', ${l}.quantity < ${l}.reserved)`;
const movementJson = (m: string, more = '') => `json_build_object('id', ${m}.id, 'itemId', ${m}.item_id, 'locationId', ${m}.location_id,
  'quantity', trim_scale(${m}.quantity), 'type', ${m}.type, 'reason', ${m}.reason,
  'source', json_build_object('type', ${m}.source_type, 'id', ${m}.source_id), 'createdBy', ${m}.created_by, 'createdAt', ${isoTimestampSql(`${m}.created_at`)}${more})`;
const reservationJson = (r: string, more = '') => `json_build_object('id', ${r}.id, 'itemId', ${r}.item_id, 'locationId', ${r}.location_id,
  'quantity', trim_scale(${r}.quantity), 'status', ${r}.status,
  'source', case when ${r}.source_type = 'sales_order'
    then json_build_object('type', 'sales_order', 'id', ${r}.sales_order_id, 'lineItemId', ${r}.sales_order_line_id)
    else json_build_object('type', 'manual') end,
  'reference', ${r}.reference, 'expiresAt', ${isoTimestampSql(`${r}.expires_at`)}, 'releaseReason', ${r}.release_reason,
  'createdBy', ${r}.created_by, 'createdAt', ${isoTimestampSql(`${r}.created_at`)}, 'updatedAt', ${isoTimestampSql(`${r}.updated_at`)}${more})`;


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
  for (const held of op.hold ?? []) at(held.itemId, held.locationId);
  return [...deltas.values()].sort((a, b) => a.itemId.localeCompare(b.itemId) || a.locationId.localeCompare(b.locationId));
}

// --- Reservations

/** Why a release's statement stopped: the reservation is not as it was read (detail: nothing). */
const RESERVATION_STALE = 'the reservation changed since it was read';

/** What a release found: `released` when this call released it, else the reservation's status (none: no such reservation). */
export type Release = { released: true } | { released: false; status?: ReservationStatus };

/**
 * Releases an open reservation in full as one read and one statement (no lock held between them): the statement
 * locks the reservation before its level (applyStock's order) and goes on only while it is as it was read; else the
 * release runs again on what changed it. `due`: only once its `expiresAt` has come (the expiry job), by its creator.
 * Without an `accountId` (the job), the reservation is looked up by id alone.
 */
export async function releaseReservation(
  db: Knex,
  reservation: { id: string; accountId?: string; userId?: string },
  reason: ReleaseReason,
  options: { due?: boolean } = {},
): Promise<Release> {
  if (!isUuid(reservation.id)) return { released: false };
  for (;;) {
    const row = await db('reservations').where({ id: reservation.id, ...reservation.accountId ? { account_id: reservation.accountId } : {} })
      .first<(ReservationRow & { version: string; due: boolean }) | undefined>('*', db.raw('xmin::text as version'), db.raw('coalesce(expires_at <= now(), false) as due'));
    if (!row || row.status !== 'open' || (options.due && !row.due)) return { released: false, status: row?.status };
    const operation = { accountId: row.account_id, userId: reservation.userId ?? row.created_by, close: [{ row, quantity: row.quantity, as: 'released' as const, reason }] };
    try {
      await applyStock(db, operation, {
        extend: (q) => ({
          ctes: [`rl as materialized (select xmin::text as version from reservations
            where account_id = ${q.param(row.account_id, 'uuid')} and id = ${q.param(row.id, 'uuid')} and status = 'open' for update)`],
          guards: [`(select ${stopSql(q, RESERVATION_STALE, "'{}'::jsonb")}
            where not exists (select 1 from rl where version = ${q.param(row.version, 'text')})) as stale`],
        }),
      });
      return { released: true };
    } catch (error) {
      if (stopOf(error)?.reason !== RESERVATION_STALE) throw error;
    }
  }
}

// --- The operation: one statement

/** What a caller writes in its stock change's statement: its record, and the record's events. */
export interface StockStatementExtension {
  /**
   * CTEs after the stock's (`name as (...)`). They may read `lv` (each level after the whole operation: item_id,
   * location_id, quantity, reserved, incoming) and `refused`, and write only `where not exists (select 1 from refused)`.
   */
  ctes?: string[];
  /** A select of the caller's events (`type` text, `data` json, `n` their order): recorded after the stock's. */
  events?: string;
  /** Jobs to enqueue with them. */
  jobs?: JobSpec[];
  /** The answer's further columns (`expression as name`), over the CTEs. */
  columns?: string[];
  /**
   * Columns evaluated before the levels are checked: a stockroom_stop there (the caller's record changed since it
   * was read) wins over a refusal, which the stale read may have caused.
   */
  guards?: string[];
}

export interface StockStatementOptions {
  /**
   * Check in the statement that the items and locations belong to the account, for a route that did not look them
   * up first: UnresolvedReferences when one does not.
   */
  checkReferences?: boolean;
  extend?: (statement: Statement) => StockStatementExtension;
}

/** The stock's CTEs of the statement (see applyStock), with the caller's after them; `sev` the events' rows. */
function stockCtes(q: Statement, op: StockOperation, deltas: LevelDelta[], options: StockStatementOptions): { ctes: string[]; columns: string[]; guards: string[] } {
  const a = q.once(op.accountId, 'uuid');
  const u = q.once(op.userId, 'uuid');
  const changes = op.move?.changes ?? [];
  const reserve = (op.reserve ?? []).map((reservation) => ({ ...reservation, id: randomUUID() }));
  const { updates, splits } = closing(op.close ?? []);
  const known = options.checkReferences
    ? `exists (select 1 from items x where x.account_id = ${a()} and x.id = d.item_id)
       and exists (select 1 from locations x where x.account_id = ${a()} and x.id = d.location_id)`
    : 'true';
  const movementIds = q.column(changes, () => randomUUID(), 'uuid');
  const reservationIds = q.column(reserve, (reservation) => reservation.id, 'uuid');
  const splitIds = q.column(splits, () => randomUUID(), 'uuid');
  const finalIds = q.column(updates.filter((update) => update.status), (update) => update.id, 'uuid');
  // A write that changes no level (a sales order that reserves nothing, a move of an order's status) has its stock
  // parts as relations known to be empty when planned: their inserts, updates and joins are not set up on every
  // execution. Only then: a write that changes a level keeps every part, so that PostgreSQL's choice between a
  // generic plan and planning each call stays the generic plan (see README, Writes in one round trip).
  // (Built only when used, as are the account's and user's parameters: see Statement.once.)
  const stockPart = (part: () => string, empty: string) => (deltas.length > 0 ? part() : `select ${empty} where false`);
  const levelColumns = 's.item_id, s.location_id, s.quantity, s.reserved, s.incoming';
  // The levels' keys, placed once for d and lk (only when there are levels to change, as stockPart says).
  const [itemIds, locationIds] = deltas.length > 0
    ? [q.column(deltas, (delta) => delta.itemId, 'uuid'), q.column(deltas, (delta) => delta.locationId, 'uuid')] : ['', ''];
  const ctes = [
    `d as (${stockPart(() => `select * from unnest(${itemIds}, ${locationIds},
       ${q.column(deltas, (delta) => microsToText(delta.quantity), 'numeric')}, ${q.column(deltas, (delta) => microsToText(delta.low), 'numeric')},
       ${q.column(deltas, (delta) => microsToText(delta.high), 'numeric')}, ${q.column(deltas, (delta) => microsToText(delta.reserved), 'numeric')},
       ${q.column(deltas, (delta) => microsToText(delta.incoming), 'numeric')}, ${q.column(deltas, (delta) => delta.takesAvailable, 'boolean')})
       as d(item_id, location_id, dq, lo, hi, dr, di, takes)`, `null::uuid as item_id, null::uuid as location_id, null::numeric as dq,
       null::numeric as lo, null::numeric as hi, null::numeric as dr, null::numeric as di, null::boolean as takes`)})`,
    // Every existing level locked in the global order before anything moves (an InitPlan of lv's, below), read as it
    // now stands (migration 020 says why a function does it).
    `lk as materialized (${stockPart(() => `select * from stockroom_lock_levels(${a()}, ${itemIds}, ${locationIds})`,
      `${levelColumns} from stock_levels s`)})`,
    `st as (select d.*, coalesce(lk.quantity, 0) as q, coalesce(lk.reserved, 0) as r, coalesce(lk.incoming, 0) as i, ${known} as known
       from d left join lk on lk.item_id = d.item_id and lk.location_id = d.location_id)`,
    `refused as (select * from st where not known or not (${ACCEPTED}))`,
    // Created at what they change by when missing (only additions pass the checks there; a level created meanwhile
    // by another is changed instead, and its constraints keep it in range).
    `lv as (${stockPart(() => `insert into stock_levels as s (account_id, item_id, location_id, quantity, reserved, incoming)
       select ${a()}, d.item_id, d.location_id, greatest(d.dq, 0), greatest(d.dr, 0), greatest(d.di, 0) from d
       where not exists (select 1 from refused) order by d.item_id, d.location_id
       on conflict (account_id, item_id, location_id) do update set (quantity, reserved, incoming, updated_at) = (
         select s.quantity + d.dq, s.reserved + d.dr, greatest(s.incoming + d.di, 0),
           case when d.dq = 0 and d.dr = 0 and d.di = 0 then s.updated_at else now() end
         from d where d.item_id = excluded.item_id and d.location_id = excluded.location_id)
       returning ${levelColumns}`, `${levelColumns} from stock_levels s`)})`,
    `mv as (${stockPart(() => `insert into stock_movements (id, account_id, created_by, type, item_id, location_id, quantity, reason, source_type, source_id)
       select m.id, ${a()}, ${u()}, ${q.param(op.move?.type ?? 'adjustment', 'text')}, m.item_id, m.location_id, m.quantity, m.reason, m.source_type, m.source_id
       from unnest(${movementIds}, ${q.column(changes, (change) => change.itemId, 'uuid')}, ${q.column(changes, (change) => change.locationId, 'uuid')},
         ${q.column(changes, (change) => String(change.quantity), 'numeric')},
         ${q.column(changes, (change) => (change.reason === undefined ? op.move!.reason : change.reason), 'text')},
         ${q.column(changes, (change) => (change.source ?? op.move!.source).type, 'text')},
         ${q.column(changes, (change) => (change.source ?? op.move!.source).id, 'uuid')}) with ordinality
         as m(id, item_id, location_id, quantity, reason, source_type, source_id, n)
       where not exists (select 1 from refused) order by m.n
       returning *`, '* from stock_movements')})`,
    `mj as (select x.n, m.* from mv m join unnest(${movementIds}) with ordinality as x(id, n) on x.id = m.id)`,
    `rs as (${stockPart(() => `insert into reservations (id, account_id, item_id, location_id, quantity, source_type, sales_order_id, sales_order_line_id,
         reference, expires_at, created_by)
       select r.id, ${a()}, r.item_id, r.location_id, r.quantity, r.source_type, r.sales_order_id, r.sales_order_line_id, r.reference, r.expires_at, ${u()}
       from unnest(${reservationIds}, ${q.column(reserve, (r) => r.itemId, 'uuid')}, ${q.column(reserve, (r) => r.locationId, 'uuid')},
         ${q.column(reserve, (r) => String(r.quantity), 'numeric')}, ${q.column(reserve, (r) => r.source.type, 'text')},
         ${q.column(reserve, (r) => (r.source.type === 'sales_order' ? r.source.id : null), 'uuid')},
         ${q.column(reserve, (r) => (r.source.type === 'sales_order' ? r.source.lineItemId : null), 'uuid')},
         ${q.column(reserve, (r) => r.reference ?? null, 'text')}, ${q.column(reserve, (r) => r.expiresAt ?? null, 'timestamptz')})
         as r(id, item_id, location_id, quantity, source_type, sales_order_id, sales_order_line_id, reference, expires_at)
       where not exists (select 1 from refused)
       returning *`, '* from reservations')})`,
    // A reservation closed in parts: each part but the last splits off as a closed reservation of its own (cs), the
    // rest staying open under its id; the last part of one closed in full is the reservation itself (cu).
    `cu as (${stockPart(() => `update reservations r set quantity = r.quantity - c.reduce, status = coalesce(c.status, r.status),
         release_reason = coalesce(c.reason, r.release_reason), updated_at = now()
       from unnest(${q.column(updates, (update) => update.id, 'uuid')}, ${q.column(updates, (update) => microsToText(update.reduce), 'numeric')},
         ${q.column(updates, (update) => update.status, 'text')}, ${q.column(updates, (update) => update.reason, 'text')}) as c(id, reduce, status, reason)
       where r.id = c.id and r.status = 'open' and not exists (select 1 from refused)
       returning r.*`, '* from reservations')})`,
    `cs as (${stockPart(() => `insert into reservations (id, account_id, item_id, location_id, quantity, status, release_reason, source_type, sales_order_id,
         sales_order_line_id, reference, expires_at, created_by)
       select c.id, r.account_id, r.item_id, r.location_id, c.quantity, c.status, c.reason, r.source_type, r.sales_order_id,
         r.sales_order_line_id, r.reference, r.expires_at, r.created_by
       from unnest(${splitIds}, ${q.column(splits, (split) => split.row.id, 'uuid')}, ${q.column(splits, (split) => String(split.quantity), 'numeric')},
         ${q.column(splits, (split) => split.as, 'text')}, ${q.column(splits, (split) => split.reason, 'text')}) as c(id, of, quantity, status, reason)
       join reservations r on r.id = c.of
       where not exists (select 1 from refused)
       returning *`, '* from reservations')})`,
    `rj as (select x.n, r.* from rs r join unnest(${reservationIds}) with ordinality as x(id, n) on x.id = r.id)`,
    `cj as (select 1 as g, x.n, r.* from cs r join unnest(${splitIds}) with ordinality as x(id, n) on x.id = r.id
       union all
       select 2, x.n, r.* from cu r join unnest(${finalIds}) with ordinality as x(id, n) on x.id = r.id)`,
  ];
  const extension = options.extend?.(q);
  ctes.push(...extension?.ctes ?? []);
  const level = `(select ${levelJson('l')} from lv l where l.item_id = y.item_id and l.location_id = y.location_id)`;
  ctes.push(`sev as (select y.type, y.data, row_number() over (order by y.g, y.k, y.n) as n from (
      select 1 as g, 1 as k, y.n, 'stock.adjusted' as type, ${movementJson('y', `, 'stockLevel', ${level}`)} as data from mj y
      union all
      select 2, 1, y.n, 'reservation.created', ${reservationJson('y', `, 'stockLevel', ${level}`)} from rj y
      union all
      select 3, y.g, y.n, 'reservation.released', ${reservationJson('y', `, 'reason', y.release_reason, 'stockLevel', ${level}`)} from cj y
      ${extension?.events ? `union all select 4, 1, x.n, x.type, x.data from (${extension.events}) x where not exists (select 1 from refused)` : ''}
    ) y)`);
  const jobs = [
    ...reserve.flatMap((reservation) => (reservation.expiresAt ? [expiryJob(reservation.id, reservation.expiresAt)] : [])),
    ...extension?.jobs ?? [],
  ];
  return {
    ctes: [...ctes, eventCtes(q, op.accountId, 'select type, data, n from sev', jobs)],
    columns: extension?.columns ?? [], guards: extension?.guards ?? [],
  };
}

/** The closes of reservations as one update per reservation (`reduce` by its split parts, `status` when closed in full) and the splits. */
function closing(closes: ClosingReservation[]) {
  const byRow = new Map<string, ClosingReservation[]>();
  for (const entry of closes) byRow.set(entry.row.id, [...byRow.get(entry.row.id) ?? [], entry]);
  const updates: Array<{ id: string; reduce: bigint; status: string | null; reason: string | null }> = [];
  const splits: ClosingReservation[] = [];
  for (const entries of byRow.values()) {
    const whole = entries.reduce((total, entry) => total + toMicros(entry.quantity), 0n) === toMicros(entries[0]!.row.quantity);
    const parts = whole ? entries.slice(0, -1) : entries;
    const last = whole ? entries.at(-1)! : undefined;
    splits.push(...parts);
    updates.push({
      id: entries[0]!.row.id, reduce: parts.reduce((total, entry) => total + toMicros(entry.quantity), 0n),
      status: last?.as ?? null, reason: last?.reason ?? null,
    });
  }
  return { updates, splits };
}

interface StockAnswer {
  levels: Array<{ itemId: string; locationId: string; level: LevelSnapshot }> | null;
  movements: MovementRecord[] | null;
  reserved: ReservationRecord[] | null;
  closed: ReservationRecord[] | null;
}

/**
 * Applies the whole operation in one statement, or none of it: the levels it touches locked in the global order
 * (item, then location) and checked, then changed; its movements, the reservations it makes and closes, its events
 * (`stock.adjusted` for every movement, `reservation.created` / `reservation.released` for every reservation made or
 * closed, each with the level after the whole operation, then the caller's) and their jobs. A refused level stops
 * the statement, which then answers one 409 naming every refused level. On `db` alone the statement is its own
 * transaction. Reservations to close must be locked before it reaches their levels: in the statement, by the
 * caller's guards (writeOrder's, releaseReservation's).
 * `extend` adds the caller's record to the same statement; its columns come back as `row`.
 */
export async function applyStock<Row = Record<string, never>>(
  db: Knex,
  op: StockOperation,
  options: StockStatementOptions = {},
): Promise<StockResult & { row: Row }> {
  const deltas = deltasOf(op);
  // What cannot be an id is no record of the account's either (and would stop the statement as a cast error).
  if (options.checkReferences && !deltas.every((delta) => isUuid(delta.itemId) && isUuid(delta.locationId))) throw new UnresolvedReferences();
  const q = new Statement();
  const { ctes, columns, guards } = stockCtes(q, op, deltas, options);
  const text = `with ${ctes.join(',\n')}
    select ${guards.map((guard) => `${guard},\n      `).join('')}(select stockroom_refuse(jsonb_agg(jsonb_build_object('itemId', item_id, 'locationId', location_id, 'quantity', q::text,
        'reserved', r::text, 'incoming', i::text, 'known', known))) from refused having count(*) > 0) as refused,
      (select json_agg(json_build_object('itemId', l.item_id, 'locationId', l.location_id, 'level', ${levelJson('l')})) from lv l) as levels,
      (select json_agg(${movementJson('y')} order by y.n) from mj y) as movements,
      (select json_agg(${reservationJson('y')} order by y.n) from rj y) as reserved,
      (select json_agg(${reservationJson('y')} order by y.g, y.n) from cj y) as closed,
      (select jobs from j) as jobs${columns.map((column) => `,\n      ${column}`).join('')}`;
  let answer: StockAnswer & Row;
  try {
    [answer] = await runStatement<StockAnswer & Row>(db, q, text) as [StockAnswer & Row];
  } catch (error) {
    if ((error as { code?: string }).code === 'SR409') throw refusalOf((error as { detail: string }).detail, deltas);
    throw error;
  }
  const { levels, movements, reserved, closed, ...row } = answer;
  const after = new Map((levels ?? []).map((entry) => [levelKey(entry), entry.level]));
  const level = (itemId: string, locationId: string) => after.get(levelKey({ itemId, locationId }))!;
  return {
    movements: (movements ?? []).map((movement) => ({ movement, level: level(movement.itemId, movement.locationId) })),
    reserved: reserved ?? [],
    closed: closed ?? [],
    level,
    row: row as unknown as Row,
  };
}

/** The one way stock moves (applyStock for operations that only move stock). */
export async function moveStock(db: Knex, op: { accountId: string; userId: string } & StockMove, options?: StockStatementOptions): Promise<AppliedMovement[]> {
  const { accountId, userId, ...move } = op;
  return (await applyStock(db, { accountId, userId, move }, options)).movements;
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

/** Why a count's statement stopped: a level it counted is not at what the count took it to be (detail: those lines, as they are). */
const COUNT_STALE = 'a counted level is not at what the count took it to be';
/** Why a count's statement stopped: a level it counted was created since the statement began (the count runs again). */
const COUNT_MISSED = 'a counted level was created meanwhile';

/** The levels of `lines` as they stand (0 when missing), in one query. */
async function readLevels(db: Knex, accountId: string, lines: CountLine[]): Promise<Map<string, bigint>> {
  const { rows } = await db.raw<{ rows: Array<{ item_id: string; location_id: string; quantity: string }> }>(
    `select s.item_id, s.location_id, s.quantity::text as quantity from stock_levels s
     join unnest(?::uuid[], ?::uuid[]) as c(item_id, location_id) on s.item_id = c.item_id and s.location_id = c.location_id
     where s.account_id = ?`,
    [lines.map((line) => line.itemId), lines.map((line) => line.locationId), accountId] as Knex.Value[],
  );
  return new Map(rows.map((row) => [levelKey({ itemId: row.item_id, locationId: row.location_id }), toMicros(row.quantity)]));
}

/**
 * Sets levels to what was counted. Each line's difference from what is on hand becomes a `count` movement (none when
 * they are equal), a physical fact that may leave a level oversold. What is on hand is the line's `expected` when
 * given (a compare-and-set, so that a count taken before other changes never silently overwrites them), else the level
 * as read. One statement (applyStock's, with the caller's record: `extend`) writes it all, if every level counted is
 * still, under its lock, at what the count took it to be: else a line's `expected` makes the count a 409 naming every
 * such line, and a level read makes the count run again.
 */
export async function countStock<Line extends CountLine, Row>(
  db: Knex,
  op: { accountId: string; userId: string; reason: string | null; source: { type: SourceType; id: string }; lines: Line[] },
  extend: (statement: Statement, lines: Array<Line & { previous: number; difference: number }>) => StockStatementExtension,
): Promise<{ lines: Array<Line & CountedLine>; row: Row }> {
  for (;;) {
    const unexpected = op.lines.filter((line) => line.expected === undefined);
    const read = unexpected.length ? await readLevels(db, op.accountId, unexpected) : new Map<string, bigint>();
    const lines = op.lines.map((line) => {
      const previous = line.expected === undefined ? read.get(levelKey(line)) ?? 0n : toMicros(line.expected);
      return { ...line, previous: fromMicros(previous), difference: fromMicros(toMicros(line.counted) - previous) };
    });
    try {
      const result = await applyStock<Row>(db, {
        accountId: op.accountId, userId: op.userId,
        move: {
          type: 'count', reason: op.reason, source: op.source,
          changes: lines.flatMap((line) => (line.difference === 0 ? [] : [{ itemId: line.itemId, locationId: line.locationId, quantity: line.difference, physical: true }])),
        },
        hold: lines.filter((line) => line.difference === 0),
      }, { extend: (q) => countCtes(q, lines, extend(q, lines)) });
      return { lines: lines.map((line) => ({ ...line, level: result.level(line.itemId, line.locationId) })), row: result.row };
    } catch (error) {
      const stop = stopOf(error);
      if (stop?.reason === COUNT_MISSED) continue;
      if (stop?.reason !== COUNT_STALE) throw error;
      const stale = (stop.detail as Array<{ itemId: string; quantity: string }>).flatMap(({ itemId, quantity }) => {
        const line = op.lines.find((entry) => entry.itemId === itemId)!;
        return line.expected === undefined ? [] : [{ itemId, locationId: line.locationId, expectedQuantity: line.expected, quantity: fromMicros(toMicros(quantity)) }];
      });
      if (stale.length) {
        const [first] = stale;
        throw new ConflictError(stale.length === 1
          ? `The count is stale: item ${first!.itemId} was expected at ${first!.expectedQuantity} but is at ${first!.quantity}; nothing was changed`
          : `The count is stale: ${stale.length} lines no longer hold their expectedQuantity; nothing was changed (see \`stale\`)`, { stale });
      }
    }
  }
}

/**
 * A count's checks in its statement, around the caller's `extension`: before the levels are checked, every level
 * counted must be, under its lock, at what the count took it to be; after they changed, at what was counted (a level
 * created since the statement began is one the first check could not see).
 */
function countCtes(q: Statement, lines: Array<CountLine & { previous: number }>, extension: StockStatementExtension): StockStatementExtension {
  const counted = `unnest(${q.column(lines, (line) => line.itemId, 'uuid')}, ${q.column(lines, (line) => line.locationId, 'uuid')},
    ${q.column(lines, (line) => String(line.previous), 'numeric')}, ${q.column(lines, (line) => String(line.counted), 'numeric')})
    with ordinality as c(item_id, location_id, previous, counted, n)`;
  // In the lines' order: the 409 names them as they were sent.
  const stop = (reason: string, levels: string, differs: string) => `(select ${stopSql(q, reason,
    "jsonb_agg(jsonb_build_object('itemId', c.item_id, 'quantity', coalesce(l.quantity, 0)::text) order by c.n)")}
    from ${counted} left join ${levels} l on l.item_id = c.item_id and l.location_id = c.location_id where ${differs} having count(*) > 0)`;
  return {
    ...extension,
    guards: [`${stop(COUNT_STALE, 'lk', 'coalesce(l.quantity, 0) <> c.previous')} as stale_count`, ...extension.guards ?? []],
    columns: [...extension.columns ?? [], `${stop(COUNT_MISSED, 'lv', 'l.quantity <> c.counted')} as missed_count`],
  };
}

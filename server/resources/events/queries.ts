import type { Knex } from 'knex';
import { toStoredEvent } from '../../../db/events.ts';
import { EVENT_TYPES, PING_EVENT, type StoredEvent } from '../../../shared/events.ts';
import { isUuid } from '../../../shared/guards.ts';
import { ApiError, ValidationError, type Problem } from '../../../shared/errors.ts';
import type { PageRequest } from '../../framework/pagination.ts';

const KINDS = new Set<string>(EVENT_TYPES);

/** `types=a,b` as a list; every unknown kind is named. */
export function parseTypes(raw: string | undefined): string[] | undefined {
  if (raw === undefined) return undefined;
  const types = raw.split(',').map((type) => type.trim()).filter(Boolean);
  const problems: Problem[] = types.filter((type) => !KINDS.has(type))
    .map((type) => ({ path: 'types', message: `"${type}" is not an event kind (one of ${EVENT_TYPES.join(', ')})` }));
  if (types.length === 0) problems.push({ path: 'types', message: 'must name at least one event kind' });
  if (problems.length) throw new ValidationError(problems);
  return types;
}

/** When an event id minted since migration 015 was made: its first 48 bits (UUIDv7); undefined for older ids. */
function mintedAt(id: string): number | undefined {
  return id[14] === '7' ? parseInt(id.slice(0, 8) + id.slice(9, 13), 16) : undefined;
}

/**
 * Why `after` names no event of the account: deleted after the retention period (410: the poller has missed
 * events and must resynchronise), or never one of its events (400). An id of the format before retention began
 * predates every newer one, so once the account has lost events to retention it is taken as one of them.
 */
async function unknownAfter(db: Knex, accountId: string, id: string, retentionDays: number): Promise<ApiError> {
  const retention = isUuid(id) && await db('event_retention').where({ account_id: accountId }).first('pruned_through');
  const minted = mintedAt(id);
  if (retention && (minted === undefined || minted <= Date.parse(retention.pruned_through))) {
    return new ApiError(410, `Event ${id} was deleted: events are kept ${retentionDays} days. Events may have been missed since: `
      + 'resynchronise from the lists (items, stock levels, orders), then poll GET /events without `after`', {
      retentionDays, prunedThrough: retention.pruned_through,
    });
  }
  return ValidationError.of('after', 'is not the id of an event of your account');
}

/**
 * The account's events in (txid, seq) order, only those whose transaction began before every one still running
 * (see migration 005): an event that commits late still sorts after everything a poller has already seen.
 */
export async function listEvents(db: Knex, accountId: string, filters: { after?: string; types?: string[] }, page: PageRequest, retentionDays: number): Promise<StoredEvent[]> {
  const query = db('events')
    .where('account_id', accountId)
    .whereNot('type', PING_EVENT)
    .whereRaw('txid < pg_snapshot_xmin(pg_current_snapshot())')
    .orderBy(['txid', 'seq'])
    .offset((page.page - 1) * page.limit)
    .limit(page.limit)
    .select('id', 'type', 'data', 'created_at');
  if (filters.types) query.whereIn('type', filters.types);
  if (filters.after !== undefined) {
    const after = isUuid(filters.after) && await db('events').where({ account_id: accountId, id: filters.after }).first('txid', 'seq');
    if (!after) throw await unknownAfter(db, accountId, filters.after, retentionDays);
    query.whereRaw('(txid, seq) > (?::xid8, ?::bigint)', [after.txid, after.seq]);
  }
  return (await query).map(toStoredEvent);
}

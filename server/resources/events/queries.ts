import type { Knex } from 'knex';
import { toStoredEvent } from '../../../db/events.ts';
import { EVENT_TYPES, PING_EVENT, type StoredEvent } from '../../../shared/events.ts';
import { isUuid } from '../../../shared/guards.ts';
import { ValidationError, type Problem } from '../../../shared/errors.ts';
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

/**
 * The account's events in (txid, seq) order, only those whose transaction began before every one still running
 * (see migration 005): an event that commits late still sorts after everything a poller has already seen.
 */
export async function listEvents(db: Knex, accountId: string, filters: { after?: string; types?: string[] }, page: PageRequest): Promise<StoredEvent[]> {
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
    if (!after) throw ValidationError.of('after', 'is not the id of an event of your account');
    query.whereRaw('(txid, seq) > (?::xid8, ?::bigint)', [after.txid, after.seq]);
  }
  return (await query).map(toStoredEvent);
}

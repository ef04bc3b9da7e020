// Paging shared by every list endpoint: `page` with `limit` or `size`, `updatedSince`, and a `Link` to the
// next page whose cursor makes deep pages cost what the first one does.
import type { Knex } from 'knex';
import { LRUCache } from 'lru-cache';
import { isUuid } from '../../shared/guards.ts';
import type { AppContext } from './context.ts';
import { ValidationError } from '../../shared/errors.ts';
import type { Reply } from './route.ts';
import {
  array, describe, integer, metaOf, named, object, optional, parseTimestamp, queryInteger, queryTimestamp, text, type AnyStruct,
} from './schema.ts';
import type { Timestamp } from '../../db/timestamps.ts';

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 250;

const pageSize = () =>
  optional(queryInteger({
    min: 1,
    max: MAX_PAGE_SIZE,
    description: `Page size (default ${DEFAULT_PAGE_SIZE}, at most ${MAX_PAGE_SIZE}). \`limit\` and \`size\` are the same parameter; if both are given they must agree.`,
  }));

const pageFields = {
  page: optional(queryInteger({ min: 1, max: 1_000_000, description: 'Page number, starting at 1.' })),
  limit: pageSize(),
  size: pageSize(),
  cursor: optional(describe(text({ max: 512 }), {
    description: 'Opaque position returned in the `Link` header of the previous page. Following `Link` keeps deep pages fast and stable while records change.',
  })),
  updatedSince: optional(queryTimestamp('Only records updated at or after this time; the list is then ordered by `updatedAt`, `id` (for incremental sync).')),
};

/** The query struct of a list endpoint: paging plus the resource's own filters. */
export function listQuery<F extends Record<string, AnyStruct>>(filters: F) {
  return object({ ...pageFields, ...filters });
}

/** `{data, page, limit}` around a named record schema: `<Name>List` in the OpenAPI document. */
export function listOf(record: AnyStruct): AnyStruct {
  return named(`${metaOf(record).name}List`, object({
    data: array(record),
    page: integer({ minimum: 1 }),
    limit: integer({ minimum: 1, maximum: MAX_PAGE_SIZE }),
  }));
}

interface PagingQuery {
  page?: number;
  limit?: number;
  size?: number;
  cursor?: string;
  updatedSince?: Date;
}

type SortKey = 'created_at' | 'updated_at';

interface Cursor {
  sort: SortKey;
  at: string;
  id: string;
  /** The page starts at this row (a remembered page start) rather than after it (a `Link` cursor). */
  inclusive?: boolean;
  /** Sent by the client (a `Link` cursor): where it leads is the client's word, never remembered. */
  fromClient?: boolean;
}

export interface PageRequest {
  page: number;
  limit: number;
  sort: SortKey;
  /** Newest first (logs); lists are oldest first otherwise. */
  descending?: boolean;
  updatedSince?: Date;
  cursor?: Cursor;
}

function encodeCursor(cursor: Cursor): string {
  return Buffer.from(JSON.stringify([cursor.sort, cursor.at, cursor.id])).toString('base64url');
}

const CURSOR_TIME = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

function decodeCursor(raw: string, sort: SortKey): Cursor {
  try {
    const [cursorSort, at, id] = JSON.parse(Buffer.from(raw, 'base64url').toString('utf8'));
    // Exactly what encodeCursor writes (a time that exists, printed back as itself): anything else would reach
    // PostgreSQL's casts and fail there.
    if (cursorSort === sort && typeof id === 'string' && isUuid(id) && typeof at === 'string' && CURSOR_TIME.test(at)
      && parseTimestamp(at)?.toISOString() === at) {
      return { sort, at, id, fromClient: true };
    }
  } catch {
    // fall through: any undecodable cursor is the caller's mistake
  }
  throw ValidationError.of('cursor', 'is not a cursor from this list (use the `Link` header as given)');
}

export function pageRequest(query: PagingQuery, options: { descending?: boolean } = {}): PageRequest {
  if (query.limit !== undefined && query.size !== undefined && query.limit !== query.size) {
    throw ValidationError.of('size', '`limit` and `size` are the same parameter and must agree when both are given');
  }
  const sort: SortKey = query.updatedSince ? 'updated_at' : 'created_at';
  return {
    page: query.page ?? 1,
    limit: query.limit ?? query.size ?? DEFAULT_PAGE_SIZE,
    sort,
    descending: options.descending,
    updatedSince: query.updatedSince,
    cursor: query.cursor === undefined ? undefined : decodeCursor(query.cursor, sort),
  };
}

interface PagedRow {
  id: string;
  created_at: Timestamp;
  updated_at: Timestamp;
}

/** Applies the page to a query of `table`: order, `updatedSince`, then the cursor or the page offset. */
export async function fetchPage<Row extends PagedRow>(
  query: Knex.QueryBuilder,
  table: string,
  request: PageRequest,
): Promise<Row[]> {
  const sortColumn = `${table}.${request.sort}`;
  if (request.updatedSince) query.where(sortColumn, '>=', request.updatedSince);
  const order = request.descending ? 'desc' : 'asc';
  const ordering = [{ column: sortColumn, order }, { column: `${table}.id`, order }];
  if (request.cursor) {
    const operator = `${request.descending ? '<' : '>'}${request.cursor.inclusive ? '=' : ''}`;
    query.whereRaw(`(??, ??) ${operator} (?::timestamptz, ?::uuid)`, [sortColumn, `${table}.id`, request.cursor.at, request.cursor.id]);
  } else if (request.page > 1) {
    // A deferred join: the OFFSET skips ids only, in an index-only scan of (account_id, sort column, id), and
    // only the page's rows are read from the table. Page 1,000 then costs about what page 1 does.
    const pageIds = query.clone().clearSelect().select(`${table}.id`).orderBy(ordering)
      .offset((request.page - 1) * request.limit).limit(request.limit);
    query.whereIn(`${table}.id`, pageIds);
  }
  return query.orderBy(ordering).limit(request.limit);
}

// Where pages begin, remembered per account, list, filters and page size. Clients loop on page numbers (the
// interface document's way), so the start of page N+1 is where the page N just served ended: page N+1 is read
// from there like a `Link` cursor, at the cost of page 1 however deep, and a record that leaves the list mid-loop
// (an archived item) does not shift the next page and hide a record. A first visit to a deep page, or one served
// by another web process, falls back to the offset; its start is remembered for the next visit. Only pages this
// process placed itself (by the offset, or from the page before) are remembered: a page read from a client's
// cursor starts where the client said, which may be anywhere, and would mislead every later plain request.
const pageStarts = new LRUCache<string, Cursor>({ max: 20_000, ttl: 10 * 60_000 });

function pageStartKey(ctx: AppContext, request: PageRequest, page: number): string {
  const params = new URLSearchParams(ctx.querystring);
  for (const name of ['page', 'cursor', 'limit', 'size']) params.delete(name);
  params.sort();
  return `${ctx.state.auth?.accountId} ${ctx.path} ${params} ${request.limit} ${page}`;
}

/** The request, reading a deep page from where it was remembered to begin. */
export function withRememberedStart(ctx: AppContext, request: PageRequest): PageRequest {
  if (request.cursor || request.page === 1) return request;
  const start = pageStarts.get(pageStartKey(ctx, request, request.page));
  return start?.sort === request.sort ? { ...request, cursor: start } : request;
}

/**
 * `Link: <...>; rel="next"` for this path with `params`: relative to the API's address (never built from the
 * request's `Host`, which the client writes), or absolute under `publicUrl` when the deployment says where it is.
 */
export function nextLink(ctx: AppContext, params: URLSearchParams, publicUrl: string | undefined): Record<string, string> {
  return { Link: `<${publicUrl ?? ''}${ctx.path}?${params}>; rel="next"` };
}

/** The list body, and a `Link` to the next page whenever this one is full. */
export function pageReply<Row extends PagedRow, T>(
  ctx: AppContext,
  request: PageRequest,
  rows: Row[],
  toRecord: (row: Row) => T,
  publicUrl: string | undefined,
): Reply {
  const body = { data: rows.map(toRecord), page: request.page, limit: request.limit };
  const placedHere = !request.cursor?.fromClient;
  const first = rows[0];
  if (first && request.page > 1 && !request.cursor) {
    pageStarts.set(pageStartKey(ctx, request, request.page), { sort: request.sort, at: first[request.sort], id: first.id, inclusive: true });
  }
  const last = rows.at(-1);
  if (rows.length < request.limit || !last) return { status: 200, body };
  if (placedHere) pageStarts.set(pageStartKey(ctx, request, request.page + 1), { sort: request.sort, at: last[request.sort], id: last.id });

  const params = new URLSearchParams(ctx.querystring);
  params.delete('size');
  params.set('page', String(request.page + 1));
  params.set('limit', String(request.limit));
  params.set('cursor', encodeCursor({ sort: request.sort, at: last[request.sort], id: last.id }));
  return { status: 200, body, headers: nextLink(ctx, params, publicUrl) };
}

import type { Next } from 'koa';
import { ApiError, ValidationError } from '../../shared/errors.ts';
import type { AppContext } from '../framework/context.ts';

interface HttpLikeError {
  status?: number;
  statusCode?: number;
  expose?: boolean;
  message?: string;
  type?: string;
  code?: string;
  constraint?: string;
  detail?: string;
  headers?: Record<string, string>;
}

// Postgres error codes that mean the request, not the server, is at fault.
const PG_CONFLICT = new Set(['23505', '40001', '40P01']);

// The database cannot be reached, or is going away: PostgreSQL's connection exceptions (08...), shutting down or
// starting up (57P01-57P03), out of connections (53300), and the socket errors of a server that is not there.
const DB_UNAVAILABLE_CODES = new Set([
  '08000', '08001', '08003', '08004', '08006', '57P01', '57P02', '57P03', '53300',
  'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'EPIPE', 'EAI_AGAIN',
]);
// pg and knex say so in words only: a dropped connection, a connect or pool-acquire timeout. Knex puts the SQL
// first ("select ... - Connection terminated unexpectedly").
const DB_UNAVAILABLE_MESSAGES = /(^|\s-\s)(Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|Knex: Timeout acquiring a connection)/;
export const DB_RETRY_AFTER_S = 2;

function isDatabaseUnavailable(error: HttpLikeError): boolean {
  return (error.code !== undefined && DB_UNAVAILABLE_CODES.has(error.code)) || DB_UNAVAILABLE_MESSAGES.test(error.message ?? '');
}

function toApiError(error: HttpLikeError, ctx: AppContext): ApiError | null {
  const status = error.status ?? error.statusCode;
  if (error instanceof SyntaxError || error.type === 'entity.parse.failed') {
    return ValidationError.of('body', `is not valid JSON: ${error.message}`);
  }
  // The client hung up before its body was read (while its key was looked up, say): raw-body finds nothing to read
  // and calls it a 500. Hanging up mid-body is raw-body's own 400 already; nobody is left to read either answer.
  if (error.type === 'stream.not.readable' && ctx.req.destroyed) {
    return new ApiError(400, 'The connection closed before the request body was read');
  }
  if (status === 413) return new ApiError(413, 'Request body is too large');
  if (status === 415) return new ApiError(415, error.message ?? 'Unsupported media type');
  if (isDatabaseUnavailable(error)) return new ApiError(503, 'The database is unavailable; retry shortly');
  if (error.code && PG_CONFLICT.has(error.code)) {
    return new ApiError(409, error.code === '23505' ? 'A record with these values already exists' : 'The request conflicted with a concurrent change; retry it');
  }
  if (status && status >= 400 && status < 500 && error.expose !== false) {
    return new ApiError(status, error.message ?? 'Request failed');
  }
  return null;
}

// Statuses the router answers without a body.
function describeEmptyError(ctx: AppContext): void {
  if (ctx.status === 404) {
    ctx.status = 404;
    ctx.body = { error: `No route for ${ctx.method} ${ctx.path}` };
  } else if (ctx.status === 405) {
    ctx.body = { error: `Method ${ctx.method} is not allowed here; allowed: ${ctx.response.get('Allow')}` };
  } else if (ctx.status === 501) {
    ctx.body = { error: `Method ${ctx.method} is not implemented` };
  }
}

// An outage answers thousands of requests a second with 503: one warning a second says so, with how many since
// the last one, rather than a line and a stack trace for each.
const UNAVAILABLE_WARNING_EVERY_MS = 1000;
let unavailableWarnedAt = -Infinity;
let unavailableSinceWarning = 0;

function warnUnavailable(ctx: AppContext, thrown: unknown): void {
  unavailableSinceWarning += 1;
  const now = performance.now();
  if (now - unavailableWarnedAt < UNAVAILABLE_WARNING_EVERY_MS) return;
  ctx.state.log.warn({ err: thrown, answered503: unavailableSinceWarning }, 'database unavailable');
  unavailableWarnedAt = now;
  unavailableSinceWarning = 0;
}

/** The one place that turns a thrown error into a status and a JSON body. */
export async function handleErrors(ctx: AppContext, next: Next): Promise<void> {
  try {
    await next();
    if (ctx.body == null) describeEmptyError(ctx);
  } catch (thrown) {
    const error = (thrown ?? {}) as HttpLikeError;
    const apiError = thrown instanceof ApiError ? thrown : toApiError(error, ctx);
    for (const [name, value] of Object.entries(error.headers ?? {})) ctx.set(name, value);
    if (apiError?.status === 503) {
      ctx.set('Retry-After', String(DB_RETRY_AFTER_S));
      warnUnavailable(ctx, thrown);
    }
    if (apiError) {
      ctx.status = apiError.status;
      ctx.body = apiError.toBody();
      return;
    }
    ctx.state.log.error({ err: thrown }, 'unhandled error');
    ctx.status = 500;
    ctx.body = { error: 'Internal server error', requestId: ctx.state.requestId };
  }
}

import type { Next } from 'koa';
import { ApiError, ValidationError } from '../framework/errors.ts';
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

function toApiError(error: HttpLikeError): ApiError | null {
  const status = error.status ?? error.statusCode;
  if (error instanceof SyntaxError || error.type === 'entity.parse.failed') {
    return ValidationError.of('body', `is not valid JSON: ${error.message}`);
  }
  if (status === 413) return new ApiError(413, 'Request body is too large');
  if (status === 415) return new ApiError(415, error.message ?? 'Unsupported media type');
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

/** The one place that turns a thrown error into a status and a JSON body. */
export async function handleErrors(ctx: AppContext, next: Next): Promise<void> {
  try {
    await next();
    if (ctx.body == null) describeEmptyError(ctx);
  } catch (thrown) {
    const error = (thrown ?? {}) as HttpLikeError;
    const apiError = thrown instanceof ApiError ? thrown : toApiError(error);
    for (const [name, value] of Object.entries(error.headers ?? {})) ctx.set(name, value);
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

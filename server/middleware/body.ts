import type { Next } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import { ApiError, ValidationError, formatPath, type Problem } from '../../shared/errors.ts';
import type { AppContext } from '../framework/context.ts';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);
/** No body of ours nests half as deep; validating and printing a deeper one would overflow the stack. */
export const MAX_BODY_DEPTH = 32;
// Keys that shadow what every object inherits: superstruct prints a value it rejects with `${value}`, which calls
// a `toString` (or `valueOf`) the body itself supplied and throws when that is not a function. No field of ours
// has such a name, so they are refused before validation sees them.
const INHERITED = new Set(Object.getOwnPropertyNames(Object.prototype));

/**
 * Refuses bodies that nest too deep or use inherited names as keys; walked breadth first without recursion, as
 * depth is the point. Only objects and arrays are queued (a million numbers cost a loop, not a million paths).
 */
function checkShape(body: unknown): void {
  const problems: Problem[] = [];
  const pending: Array<[object, Array<string | number>]> = body !== null && typeof body === 'object' ? [[body, []]] : [];
  for (let next = 0; next < pending.length; next++) {
    const [value, path] = pending[next]!;
    if (path.length >= MAX_BODY_DEPTH) throw ValidationError.of('body', `must not nest objects and arrays more than ${MAX_BODY_DEPTH} deep`);
    if (Array.isArray(value)) {
      value.forEach((inner: unknown, index) => {
        if (inner !== null && typeof inner === 'object') pending.push([inner, [...path, index]]);
      });
      continue;
    }
    for (const key in value) {
      const inner: unknown = (value as Record<string, unknown>)[key];
      if (INHERITED.has(key)) problems.push({ path: formatPath([...path, key]), message: 'is not an allowed field' });
      else if (inner !== null && typeof inner === 'object') pending.push([inner, [...path, key]]);
    }
  }
  if (problems.length) throw new ValidationError(problems);
}

function hasBody(ctx: AppContext): boolean {
  return ctx.get('Transfer-Encoding') !== '' || Number(ctx.get('Content-Length')) > 0;
}

function tooLarge(ctx: AppContext): never {
  // The rest of the body is never read: closing the connection spares reading (and discarding) it for keep-alive.
  ctx.set('Connection', 'close');
  throw new ApiError(413, 'Request body is too large');
}

/**
 * A declared Content-Length over the limit is refused before anything else is done for the request (before the
 * key is looked up), and without reading the body. A chunked body is counted as it is read (see jsonBody).
 */
export function refuseOversizedBody(limitBytes: number) {
  return async function refuseOversizedBody(ctx: AppContext, next: Next): Promise<void> {
    if (Number(ctx.get('Content-Length')) > limitBytes) tooLarge(ctx);
    await next();
  };
}

/** JSON bodies only, up to the configured size; anything else is a 415 rather than a silently empty body. */
export function jsonBody(limitBytes: number) {
  const parse = koaBody({
    json: true,
    urlencoded: false,
    text: false,
    multipart: false,
    jsonStrict: true,
    jsonLimit: limitBytes,
    // The Idempotency-Key check hashes the body as sent.
    includeUnparsed: true,
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH],
    onError: (error, ctx) => {
      // raw-body stops reading a chunked body at the limit.
      if ((error as { status?: number }).status === 413) tooLarge(ctx as AppContext);
      // Throwing hands the error to handleErrors; returning would let the route run without a body.
      throw error;
    },
  });
  return async function jsonBody(ctx: AppContext, next: Next): Promise<void> {
    if (!BODY_METHODS.has(ctx.method)) return next();
    if (hasBody(ctx) && !ctx.is('application/json', '+json')) {
      throw new ApiError(415, 'Request bodies must be JSON: send Content-Type: application/json');
    }
    await parse(ctx, () => {
      checkShape(ctx.request.body);
      return next();
    });
  };
}

import type { Next } from 'koa';
import { HttpMethodEnum, koaBody } from 'koa-body';
import { ApiError } from '../framework/errors.ts';
import type { AppContext } from '../framework/context.ts';

const BODY_METHODS = new Set(['POST', 'PUT', 'PATCH']);

function hasBody(ctx: AppContext): boolean {
  return ctx.get('Transfer-Encoding') !== '' || Number(ctx.get('Content-Length')) > 0;
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
    parsedMethods: [HttpMethodEnum.POST, HttpMethodEnum.PUT, HttpMethodEnum.PATCH],
    onError: (error) => {
      // Throwing hands the error to handleErrors; returning would let the route run without a body.
      throw error;
    },
  });
  return async function jsonBody(ctx: AppContext, next: Next): Promise<void> {
    if (!BODY_METHODS.has(ctx.method)) return next();
    if (hasBody(ctx) && !ctx.is('application/json', '+json')) {
      throw new ApiError(415, 'Request bodies must be JSON: send Content-Type: application/json');
    }
    await parse(ctx, next);
  };
}

import type { Next } from 'koa';
import type { Knex } from 'knex';
import { findApiKey } from '../../db/accounts.ts';
import { ApiError } from '../../shared/errors.ts';
import type { AppContext } from '../framework/context.ts';

/** Looks the X-API-Key up without rejecting anything yet: the rate limiter needs to know whose request it is. */
export function identify(db: Knex) {
  return async function identify(ctx: AppContext, next: Next): Promise<void> {
    const key = ctx.get('X-API-Key');
    if (key) {
      const identity = await findApiKey(db, key);
      if (identity) ctx.state.auth = identity;
    }
    await next();
  };
}

export async function requireApiKey(ctx: AppContext, next: Next): Promise<void> {
  if (!ctx.state.auth) {
    if (ctx.get('X-API-Key')) throw new ApiError(401, 'Invalid API key');
    if (/^bearer\s/i.test(ctx.get('Authorization'))) {
      throw new ApiError(401, 'API keys are not accepted as a Bearer token: send the key in the X-API-Key header');
    }
    throw new ApiError(400, 'No token found');
  }
  await next();
}

/** With REQUIRE_HTTPS, a request that came in over plain HTTP is refused before its key is ever looked up. */
export async function requireHttps(ctx: AppContext, next: Next): Promise<void> {
  if (ctx.protocol !== 'https') throw new ApiError(403, 'HTTPS required');
  await next();
}

import { randomUUID } from 'node:crypto';
import type { Next } from 'koa';
import type { Logger } from '../../shared/logger.ts';
import type { AppContext } from '../framework/context.ts';

const SANE_REQUEST_ID = /^[\w.:-]{1,128}$/;

/** Tags the request with an id (the caller's, when it sent a sane one) and logs one line when it ends. */
export function requestContext(logger: Logger) {
  return async function requestContext(ctx: AppContext, next: Next): Promise<void> {
    const incoming = ctx.get('X-Request-Id');
    const requestId = SANE_REQUEST_ID.test(incoming) ? incoming : randomUUID();
    const started = performance.now();
    ctx.state.requestId = requestId;
    ctx.state.log = logger.child({ requestId });
    ctx.set('X-Request-Id', requestId);
    try {
      await next();
    } finally {
      ctx.state.log.info({
        method: ctx.method,
        path: ctx.path,
        status: ctx.status,
        durationMs: Math.round((performance.now() - started) * 10) / 10,
        accountId: ctx.state.auth?.accountId,
        ip: ctx.ip,
      }, 'request');
    }
  };
}

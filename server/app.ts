// The middleware order is the architecture: count (with METRICS_TOKEN), tag and log the request, map errors;
// then the public routes (/metrics among them) behind their own per-IP limit, or for the API: refuse oversized
// bodies unread, HTTPS, whose key, rate limit, authenticate, parse the body, Idempotency-Key, route.
import Router from '@koa/router';
import Koa from 'koa';
import compose from 'koa-compose';
import type { Knex } from 'knex';
import type { Config } from '../shared/config.ts';
import type { Logger } from '../shared/logger.ts';
import { systemResolve, type ResolveHost } from '../shared/webhook-urls.ts';
import type { AppContext, AppState } from './framework/context.ts';
import { publicRouter } from './public-routes.ts';
import { identify, requireApiKey, requireHttps } from './middleware/auth.ts';
import { jsonBody, refuseOversizedBody } from './middleware/body.ts';
import { handleErrors } from './middleware/errors.ts';
import { idempotency } from './middleware/idempotency.ts';
import { publicRateLimit, rateLimit } from './middleware/rate-limit.ts';
import { requestContext } from './middleware/request-context.ts';
import { mountRoutes } from './framework/route.ts';
import { apiDocument } from './api-document.ts';
import { createMetrics, routeTemplate } from './metrics.ts';
import { API_PREFIX, apiRoutes } from './routes.ts';

export interface AppDeps {
  db: Knex;
  config: Config;
  logger: Logger;
  /** How webhook hosts resolve; the system resolver unless a test gives another. */
  resolveHost?: ResolveHost;
}

export function createApp({ db, config, logger, resolveHost = systemResolve }: AppDeps): Koa<AppState> {
  const app = new Koa<AppState>();
  app.proxy = config.trustProxy;
  // The client is the address the last trusted proxy appended: the entries before it are the client's own words.
  app.maxIpsCount = config.trustProxyHops;
  // Every error is answered by handleErrors; Koa's own handler would print to stderr.
  app.silent = true;

  const api = new Router<AppState>({ prefix: API_PREFIX });
  mountRoutes(api, apiRoutes, { db, config, resolveHost });
  const publicRoutes = publicRouter(db, apiDocument());
  const metrics = config.metricsToken
    ? createMetrics({ token: config.metricsToken, db, logger, routeOf: routeTemplate([api, publicRoutes]) })
    : undefined;
  const publicChain = compose<AppContext>([
    publicRateLimit({ perIp: config.rateLimitPublicPerIp, windowMs: config.rateLimitWindowMs }),
    ...(metrics ? [metrics.serve] : []),
    publicRoutes.routes() as Koa.Middleware<AppState>,
  ]);

  const apiChain = compose<AppContext>([
    refuseOversizedBody(config.bodyLimitBytes),
    ...(config.requireHttps ? [requireHttps] : []),
    identify(db),
    rateLimit({
      perKey: config.rateLimitPerKey, perIp: config.rateLimitPerIp, windowMs: config.rateLimitWindowMs, keyStore: config.rateLimitStore, db, logger,
    }),
    requireApiKey,
    jsonBody(config.bodyLimitBytes),
    idempotency(db, config.encryptionKey),
    api.routes() as Koa.Middleware<AppState>,
    api.allowedMethods() as Koa.Middleware<AppState>,
  ]);

  if (metrics) app.use(metrics.observe);
  app.use(requestContext(logger));
  app.use(handleErrors);
  // The document and Swagger UI live under the API prefix but need no key.
  const isApi = (ctx: Koa.Context) => (ctx.path === API_PREFIX || ctx.path.startsWith(`${API_PREFIX}/`))
    && !publicRoutes.match(ctx.path, ctx.method).route;
  app.use((ctx, next) => (isApi(ctx) ? apiChain(ctx, next) : publicChain(ctx, next)));
  return app;
}

// Public, keyless routes: the OpenAPI document, Swagger UI with assets served from swagger-ui-dist (so the
// page renders with no internet), and /health.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import Router from '@koa/router';
import type { Knex } from 'knex';
import type { AppState } from './framework/context.ts';
import { API_PREFIX } from './routes.ts';

const require = createRequire(import.meta.url);
// The package's index loads the browser bundles into Node (+39 MB resident): only its folder is needed here.
const swaggerDist: string = require('swagger-ui-dist/absolute-path.js')();
const swaggerVersion: string = require('swagger-ui-dist/package.json').version;

const ASSETS_PATH = `${API_PREFIX}/docs/assets`;
// koa2-swagger-ui asks for `<cdn>/<version>/<file>`; these are the files it asks for, mapped to the package's. A
// Map, not an object: a name from the URL such as `constructor` must find nothing, not Object.prototype's.
const ASSETS = new Map<string, { file: string; type: string }>([
  ['swagger-ui.min.css', { file: 'swagger-ui.css', type: 'text/css' }],
  ['swagger-ui-bundle.js', { file: 'swagger-ui-bundle.js', type: 'application/javascript' }],
  ['swagger-ui-standalone-preset.js', { file: 'swagger-ui-standalone-preset.js', type: 'application/javascript' }],
  ['favicon.png', { file: 'favicon-32x32.png', type: 'image/png' }],
]);

const HEALTH_TIMEOUT_MS = 2000;

export function publicRouter(db: Knex, openApiDocument: object): Router<AppState> {
  const router = new Router<AppState>();
  const documentJson = JSON.stringify(openApiDocument);
  const assetCache = new Map<string, Buffer>();

  router.get(`${API_PREFIX}/openapi.json`, (ctx) => {
    ctx.type = 'application/json';
    ctx.body = documentJson;
  });

  // Loaded on the first visit: koa2-swagger-ui and its templating hold ~20 MB the API itself never needs.
  const loadSwaggerUi = async () => (await import('koa2-swagger-ui')).koaSwagger({
    routePrefix: false,
    title: 'Stockroom API',
    swaggerVersion,
    swaggerCdnUrl: ASSETS_PATH,
    favicon: `${ASSETS_PATH}/${swaggerVersion}/favicon.png`,
    hideTopbar: true,
    // Keys are not kept in the browser's storage: the page forgets them when it closes.
    swaggerOptions: { url: `${API_PREFIX}/openapi.json`, persistAuthorization: false },
  });
  let swaggerUi: ReturnType<typeof loadSwaggerUi> | undefined;
  router.get(`${API_PREFIX}/docs/swagger`, async (ctx, next) => {
    swaggerUi ??= loadSwaggerUi();
    await (await swaggerUi)(ctx, next);
    // The template links web fonts from Google; the page must not reach outside this service.
    if (typeof ctx.body === 'string') ctx.body = ctx.body.replace(/<link[^>]+fonts\.googleapis\.com[^>]*>/g, '');
  });

  router.get(`${ASSETS_PATH}/:version/:file`, (ctx) => {
    const asset = ASSETS.get(ctx.params.file ?? '');
    if (!asset || ctx.params.version !== swaggerVersion) return;
    let content = assetCache.get(asset.file);
    if (!content) {
      content = readFileSync(join(swaggerDist, asset.file));
      assetCache.set(asset.file, content);
    }
    ctx.type = asset.type;
    ctx.set('Cache-Control', 'public, max-age=86400');
    ctx.body = content;
  });

  router.get('/health', async (ctx) => {
    try {
      await db.raw('select 1').timeout(HEALTH_TIMEOUT_MS, { cancel: true });
      ctx.body = { status: 'ok' };
    } catch (error) {
      ctx.status = 503;
      ctx.body = { status: 'unavailable', error: 'The database does not answer' };
      ctx.state.log.warn({ err: error }, 'health check failed');
    }
  });

  return router;
}

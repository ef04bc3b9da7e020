import SwaggerParser from '@apidevtools/swagger-parser';
import test from 'ava';
import { apiRoutes } from '../server/routes.ts';
import { useHarness } from './helpers/harness.ts';

const h = useHarness(test);

test('the OpenAPI document is valid OpenAPI 3.1 and needs no key', async (t) => {
  const { status, body } = await h.app.api().get('/openapi.json');
  t.is(status, 200);
  t.is(body.openapi, '3.1.0');
  await t.notThrowsAsync(SwaggerParser.validate(structuredClone(body)));
});

test('the document lists every route with its statuses, the X-API-Key scheme and the error bodies', async (t) => {
  const { body } = await h.app.api().get('/openapi.json');
  t.deepEqual(body.components.securitySchemes.ApiKey, { type: 'apiKey', in: 'header', name: 'X-API-Key' });
  t.deepEqual(body.security, [{ ApiKey: [] }]);
  t.truthy(body.components.schemas.ValidationError);
  for (const route of apiRoutes) {
    const operation = body.paths[route.path]?.[route.method];
    t.truthy(operation, `${route.method} ${route.path}`);
    const statuses = Object.keys(operation.responses);
    for (const status of [String(route.success.status), '400', '401', '429', '500', '503']) t.true(statuses.includes(status), `${route.operationId} ${status}`);
    if (route.body) t.true(statuses.includes('413') && statuses.includes('415'));
    if (route.path.includes('{id}')) t.true(statuses.includes('404'), `${route.operationId} 404`);
  }
  t.true('409' in body.paths['/items'].post.responses);
  for (const path of ['/stock-adjustments', '/stock-transfers']) t.regex(body.paths[path].post.responses['409'].description, /below zero/);
  t.deepEqual(body.components.schemas.StockMovement.properties.type.enum, ['adjustment', 'transfer', 'purchase_receipt', 'production', 'sales_fulfillment']);
  const listParams = body.paths['/inventory-items'].get.parameters.map((p: { name: string }) => p.name);
  for (const name of ['page', 'limit', 'size', 'updatedSince', 'sku', 'q', 'includeArchived']) t.true(listParams.includes(name), name);
});

test('the document describes the same fields the API validates', async (t) => {
  const { body } = await h.app.api().get('/openapi.json');
  const create = body.components.schemas.CreateItem;
  t.deepEqual(create.required, ['sku', 'name']);
  t.is(create.additionalProperties, false);
  t.is(create.properties.unit.default, 'pcs');
  t.deepEqual(create.properties.price.type, ['number', 'null']);
  t.deepEqual(body.components.schemas.UpdateItem.required, undefined);
  t.true('archived' in body.components.schemas.UpdateItem.properties);
});

test('Swagger UI and its assets are served by the API itself, without a key', async (t) => {
  const page = await h.app.api().get('/docs/swagger');
  t.is(page.status, 200);
  t.regex(page.headers.get('content-type') ?? '', /text\/html/);
  t.regex(page.body, /openapi\.json/);
  const assets = [...page.body.matchAll(/(?:src|href)="(\/rest\/api\/v2\/docs\/assets\/[^"]+)"/g)].map((m: RegExpMatchArray) => m[1]!);
  t.true(assets.length >= 3, 'css, bundle and preset');
  for (const asset of assets) {
    const response = await h.app.api().get(`~${asset}`);
    t.is(response.status, 200, asset);
    t.true(Number(response.headers.get('content-length')) > (asset.endsWith('.png') ? 100 : 10_000), asset);
  }
  t.false(/https?:\/\//.test(page.body.replace(/xmlns(:xlink)?="http:\/\/www\.w3\.org[^"]*"/g, '')), 'nothing loaded from another host');
});

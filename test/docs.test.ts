import SwaggerParser from '@apidevtools/swagger-parser';
import test from 'ava';
import { apiDocument } from '../server/api-document.ts';
import { apiRoutes } from '../server/routes.ts';
import { EVENT_TYPES, PING_EVENT } from '../shared/events.ts';
import { checkDelivery, checkResponse } from './helpers/contract.ts';
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
  t.deepEqual(body.components.schemas.StockMovement.properties.type.enum, ['adjustment', 'transfer', 'purchase_receipt', 'production', 'sales_fulfillment', 'count']);
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

test('asset names that are Object.prototype\'s own (constructor, __proto__, toString) are 404s, not 500s', async (t) => {
  const { version } = (await import('swagger-ui-dist/package.json', { with: { type: 'json' } })).default;
  for (const name of ['constructor', '__proto__', 'toString', 'valueOf', 'hasOwnProperty', 'swagger-ui.min.css.map']) {
    const response = await h.app.api().get(`/docs/assets/${version}/${name}`);
    t.is(response.status, 404, name);
    t.is(typeof response.body.error, 'string', name);
  }
  t.false(h.app.logs.some((line) => line.includes('unhandled error')));
});

test('every array a request body may carry has a maxItems, so a longer one is refused before its entries are checked', (t) => {
  const document = apiDocument() as { paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: unknown }> } }>>; components: { schemas: Record<string, unknown> } };
  const unbounded: string[] = [];
  const seen = new Set<unknown>();
  const walk = (schema: unknown, where: string): void => {
    if (schema === null || typeof schema !== 'object' || seen.has(schema)) return;
    seen.add(schema);
    const node = schema as Record<string, unknown>;
    if (typeof node.$ref === 'string') return walk(document.components.schemas[node.$ref.split('/').pop()!], node.$ref);
    if (node.type === 'array' && typeof node.maxItems !== 'number') unbounded.push(where);
    for (const [key, inner] of Object.entries(node)) walk(inner, `${where}.${key}`);
  };
  for (const [path, operations] of Object.entries(document.paths)) {
    for (const [method, operation] of Object.entries(operations)) {
      if (operation.requestBody) walk(operation.requestBody.content['application/json']!.schema, `${method} ${path}`);
    }
  }
  t.deepEqual(unbounded, []);
  t.true(seen.size > 20, 'the walk reached the request schemas');
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

test('every response the tests receive is checked against the document: an undescribed status or body fails', (t) => {
  t.throws(() => checkResponse('GET', `${h.app.baseUrl}/rest/api/v2/items`, 418, 'application/json', { error: 'teapot' }), { message: /lists only 200, 400/ });
  t.throws(() => checkResponse('GET', `${h.app.baseUrl}/rest/api/v2/items`, 200, 'application/json', { data: [{ id: 1 }], page: 1, limit: 50 }), { message: /required/ });
  t.throws(() => checkResponse('GET', `${h.app.baseUrl}/rest/api/v1/items`, 404, 'text/plain', 'Not Found'), { message: /JSON `Error`/ });
  t.notThrows(() => checkResponse('GET', `${h.app.baseUrl}/rest/api/v2/items`, 200, 'application/json', { data: [], page: 1, limit: 50 }));
});

test('decimals carry no multipleOf: 0.4 is a valid price for a JSON Schema validator, the 6-decimal rule is in words', async (t) => {
  const { api } = await h.newAccount();
  const { status, body } = await api.post('/items', { sku: 'DEC-1', name: 'Decimal', price: 0.4, cost: 0.35 });
  t.is(status, 201);
  t.is(body.price, 0.4);
  const { body: document } = await h.app.api().get('/openapi.json');
  const price = document.components.schemas.CreateItem.properties.price;
  t.false(JSON.stringify(document).includes('multipleOf'));
  t.regex(price.description, /6 decimal places/);
});

test('every POST documents Idempotency-Key, its 409 with Retry-After and the Idempotent-Replayed header', async (t) => {
  const { body } = await h.app.api().get('/openapi.json');
  t.is(body.components.parameters.IdempotencyKey.in, 'header');
  t.is(body.components.parameters.IdempotencyKey.schema.maxLength, 255);
  for (const route of apiRoutes.filter((candidate) => candidate.method === 'post')) {
    const operation = body.paths[route.path].post;
    t.true(operation.parameters.some((p: { $ref?: string }) => p.$ref === '#/components/parameters/IdempotencyKey'), route.operationId);
    t.regex(operation.responses['409'].description, /Idempotency-Key/, route.operationId);
    t.truthy(operation.responses['409'].headers['Retry-After'], route.operationId);
    t.truthy(operation.responses[String(route.success.status)].headers['Idempotent-Replayed'], route.operationId);
  }
  for (const route of apiRoutes.filter((candidate) => candidate.method !== 'post')) {
    t.false(JSON.stringify(body.paths[route.path][route.method].parameters ?? []).includes('IdempotencyKey'), route.operationId);
  }
});

test('the document\'s webhooks describe the delivery of every kind of event, and the check of deliveries can fail', async (t) => {
  const document = apiDocument() as { webhooks: Record<string, unknown> };
  t.deepEqual(Object.keys(document.webhooks).sort(), [...EVENT_TYPES, PING_EVENT].sort());
  const ping = { id: '3f8e2c1a-6b7d-4e9f-9a21-5c0d8e7b6a14', type: PING_EVENT, createdAt: new Date().toISOString(), data: { webhookId: 'w' } };
  t.notThrows(() => checkDelivery(ping));
  t.throws(() => checkDelivery({ ...ping, data: {} } as typeof ping), { message: /breaks the OpenAPI document/ });
  t.throws(() => checkDelivery({ ...ping, type: 'order.shipped' }), { message: /do not list/ });
});

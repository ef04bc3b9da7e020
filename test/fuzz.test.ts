// No input may produce a 500. Property-based tests send every POST and PATCH route generated hostile bodies and
// every list route generated query strings, driven by the route table and the OpenAPI document (so new routes
// are covered without a change here). Every refusal is a 4xx JSON `error` (with `errors` on a 400 validation),
// shows no stack trace, and leaves the row count of every table as it was. The client checks every answer
// against the document as well.
//
// `npm test` runs FUZZ_RUNS (default 40) cases per route; `npm run test:fuzz` runs 1000.
import fc from 'fast-check';
import test from 'ava';
import type { JsonSchema } from '../server/framework/schema.ts';
import { apiDocument } from '../server/api-document.ts';
import { apiRoutes } from '../server/routes.ts';
import type { Client, Response } from './helpers/client.ts';
import { tableCounts } from './helpers/counts.ts';
import { brokenValue, hostileValue, queryString, toJson, validValue, type SchemaContext } from './helpers/fuzz.ts';
import { useHarness, type RunningApp } from './helpers/harness.ts';

const RUNS = Number(process.env.FUZZ_RUNS ?? 40);

// Serial: each case compares the row counts of the whole database.
const h = useHarness(test);
const document = apiDocument() as unknown as {
  paths: Record<string, Record<string, { requestBody?: { content: Record<string, { schema: JsonSchema }> }; parameters?: Array<JsonSchema> }>>;
  components: { schemas: Record<string, JsonSchema> };
};

let app: RunningApp;
let api: Client;
/** An id of a record of the fuzzing account per collection, for `{id}` in paths. */
const recordIds: Record<string, string> = {};
let context: SchemaContext;

async function must(response: Promise<Response>): Promise<string> {
  const { status, body } = await response;
  if (status >= 300) throw new Error(`fixture: ${status} ${JSON.stringify(body)}`);
  return body.id ?? body.eventId;
}

test.before(async () => {
  // Every host a webhook URL names resolves to a public address: no DNS from the fuzzer.
  app = await h.startApp({}, { resolveHost: async () => ['93.184.216.34'] });
  const account = await h.newAccount();
  api = app.api(account.key);
  const itemId = await must(api.post('/items', { sku: 'FUZZ-1', name: 'Fuzzed', price: 2 }));
  const partId = await must(api.post('/items', { sku: 'FUZZ-2', name: 'Part' }));
  const locationId = await must(api.post('/locations', { name: 'Main', code: 'MAIN' }));
  const otherLocationId = await must(api.post('/locations', { name: 'Back', code: 'BACK' }));
  const customerId = await must(api.post('/customers', { name: 'Ada' }));
  for (const id of [itemId, partId]) await api.post('/stock-adjustments', { itemId: id, locationId, quantity: 1000, reason: 'fuzz' });
  Object.assign(recordIds, {
    items: itemId, 'inventory-items': itemId, locations: locationId, customers: customerId,
    'stock-adjustments': await must(api.post('/stock-adjustments', { itemId, locationId, quantity: 1, reason: 'fuzz' })),
    'stock-transfers': await must(api.post('/stock-transfers', { itemId, fromLocationId: locationId, toLocationId: otherLocationId, quantity: 1 })),
    'sales-orders': await must(api.post('/sales-orders', { customerId, lineItems: [{ itemId, quantity: 1 }] })),
    'purchase-orders': await must(api.post('/purchase-orders', { supplierName: 'Acme', locationId, lines: [{ itemId, quantity: 1, unitCost: 1 }] })),
    'production-records': await must(api.post('/production-records', { itemId, locationId, quantity: 1, components: [{ itemId: partId, quantity: 1 }] })),
    webhooks: await must(api.post('/webhooks', { url: 'https://hooks.example.com/in', events: ['*'] })),
  });
  // From the table: /events may hold a new event back while another test file's transaction is open.
  const eventId = (await h.db('events').where({ account_id: account.accountId }).first('id')).id as string;
  context = {
    resolve: (ref) => document.components.schemas[ref.split('/').pop()!]!,
    fixtures: {
      itemId: [itemId, partId], locationId: [locationId], fromLocationId: [locationId], toLocationId: [otherLocationId],
      customerId: [customerId], eventId: [eventId], sku: ['FUZZ-1', 'FUZZ-2'], webhookId: [recordIds.webhooks!],
    },
  };
});

function concretePath(template: string): string {
  const collection = template.split('/')[1]!;
  return template.replace(/\{\w+\}/g, () => recordIds[collection] ?? '3f8e2c1a-6b7d-4e9f-9a21-5c0d8e7b6a14');
}

/** fast-check's report names the seed and the shrunk case; bodies can be megabytes, so the case is cut short. */
const settings = <T>(): fc.Parameters<T> => ({
  numRuns: RUNS,
  reporter(details) {
    if (!details.failed) return;
    const error = details.errorInstance instanceof Error ? details.errorInstance.message : String(details.errorInstance);
    throw new Error(`seed ${details.seed}, path "${details.counterexamplePath}" (replay with { seed, path }): ${error.slice(0, 1500)}`);
  },
});

const STACK_TRACE = /\n\s+at |node_modules|\.ts:\d+|Error:/;

/** Sends one generated request and checks what a refusal must be. */
async function probe(method: string, path: string, body?: string): Promise<number> {
  const before = await tableCounts(h.db);
  const response = await api.request(method, path, body === undefined ? {} : { body, headers: { 'Content-Type': 'application/json' } });
  const shown = `${method} ${path.slice(0, 500)} ${body?.slice(0, 300) ?? ''}\n=> ${response.status} ${JSON.stringify(response.body).slice(0, 300)}`;
  if (response.status >= 500) {
    const logged = app.logs.filter((line) => line.includes(response.body?.requestId ?? '-')).join('').slice(0, 1500);
    throw new Error(`a 5xx: ${shown}\nthe server logged: ${logged}`);
  }
  if (response.status < 400) return response.status;
  if (typeof response.body?.error !== 'string') throw new Error(`a refusal without a JSON error: ${shown}`);
  if (response.status === 400 && response.body.error === 'Validation failed' && !(response.body.errors?.length > 0)) throw new Error(`a validation error naming no problem: ${shown}`);
  if (STACK_TRACE.test(JSON.stringify(response.body))) throw new Error(`internals in the answer: ${shown}`);
  const after = await tableCounts(h.db);
  const changed = Object.keys(after).filter((table) => after[table] !== before[table]);
  if (changed.length) throw new Error(`a refused request changed ${changed.join(', ')}: ${shown}`);
  return response.status;
}

const bodyRoutes = apiRoutes.filter((route) => route.method === 'post' || route.method === 'patch');
const listRoutes = apiRoutes.filter((route) => route.method === 'get' && route.success.list);

for (const route of bodyRoutes) {
  test.serial(`${route.method.toUpperCase()} ${route.path}: no generated body gets a 5xx, and refused ones write nothing`, async (t) => {
    t.timeout(Math.max(60_000, RUNS * 200));
    const schema = document.paths[route.path]![route.method]!.requestBody?.content['application/json']!.schema ?? { type: 'object', properties: {} };
    const valid = validValue(schema, context);
    const bodies = fc.oneof({ weight: 3, arbitrary: brokenValue(valid) }, { weight: 1, arbitrary: hostileValue }, { weight: 1, arbitrary: valid });
    await fc.assert(fc.asyncProperty(bodies, async (body) => probe(route.method.toUpperCase(), concretePath(route.path), toJson(body)).then(() => undefined)), settings());
    t.pass();
  });
}

for (const route of listRoutes) {
  test.serial(`GET ${route.path}: no generated query string gets a 5xx`, async (t) => {
    t.timeout(Math.max(60_000, RUNS * 200));
    const parameters = (document.paths[route.path]!.get!.parameters ?? [])
      .filter((parameter) => parameter.in === 'query') as Array<{ name: string; schema: JsonSchema }>;
    await fc.assert(fc.asyncProperty(queryString(parameters, context), async (query) => probe('GET', `${concretePath(route.path)}?${query}`).then(() => undefined)), settings());
    t.pass();
  });
}

const cursorOf = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');

// Every case that found a 5xx, shrunk, with the seed and path that found it and the cause that was fixed.
const REGRESSIONS: Array<{ found: string; cause: string; method: string; path: string; body?: string }> = [
  {
    found: 'seed 744211718, path "19:159"', cause: 'superstruct and JSON.stringify overflow the stack on deep nesting: bodies are refused past 32 levels',
    method: 'POST', path: '/locations', body: `{"name":"x","code":${'['.repeat(5000)}${']'.repeat(5000)}}`,
  },
  {
    found: 'seed -1060113941, path "18:142:3:3:3"', cause: 'superstruct prints a rejected value with `${value}`, calling the body\'s own `toString`: such keys are refused first',
    method: 'POST', path: '/items', body: '{"sku":"FUZZ-2","name":"NO!n=>","unit":{"toString":""},"price":947.75}',
  },
  { found: 'seed -1226917818, path "16:3:4:4:4:5"', cause: 'as above', method: 'POST', path: '/purchase-orders/{id}/cancel', body: '{"toString":[{"toString":null}]}' },
  { found: 'seed 1734197714, path "1:8:5"', cause: 'as above', method: 'PATCH', path: '/webhooks/{id}', body: '{"url":"https://example.com/hook","toString":[{"toString":null}]}' },
  { found: 'seed -1966249648, path "203:4"', cause: 'PostgreSQL text cannot hold NUL: text() refuses it', method: 'GET', path: '/inventory-items?q=%00' },
  { found: 'seed -1663328826, path "103"', cause: 'as above', method: 'GET', path: '/customers?email=%00' },
  { found: 'by hand, after the two above', cause: 'as above, in a body', method: 'POST', path: '/locations', body: '{"name":"a\\u0000b"}' },
  {
    found: 'seed 421937873, path "51:1"', cause: 'a cursor whose time was a number (or whose id was not a uuid) reached PostgreSQL\'s casts: cursors are checked to be what encodeCursor writes',
    method: 'GET', path: `/purchase-orders?cursor=${cursorOf(['created_at', 8640000000000000, '3f8e2c1a-6b7d-4e9f-9a21-5c0d8e7b6a14'])}`,
  },
  {
    found: 'seed 153113519, path "862:159:1:1" (1000 runs)', cause: 'superstruct runs the order\'s refinement even when a line failed its own (Infinity is a number): the total\'s BigInt threw; it now checks the lines first',
    method: 'POST', path: '/purchase-orders', body: '{"supplierName":"CJ","locationId":"{locationId}","lines":[{"itemId":"{itemId}","quantity":1e400,"unitCost":1.75}]}',
  },
  {
    found: 'seed -1434925961, path "324:117:2" (1000 runs)', cause: 'not a 5xx: email() accepted addresses its documented `format: email` does not; it now checks what the format means',
    method: 'PATCH', path: '/customers/{id}', body: '{"email":"https://user:pass@example.com/x"}',
  },
  { found: 'by hand, after the one above', cause: 'as above', method: 'GET', path: `/items?cursor=${cursorOf(['created_at', '2026-01-01T00:00:00.000Z', 'not-a-uuid'])}` },
  {
    found: 'seed 373847489, path "35:1:0:0:2:1"', cause: 'Node answered a 16 KB+ request line with a bare 431 the document did not list: now a JSON error, documented',
    method: 'GET', path: `/sales-orders?customerId=${'x'.repeat(20_000)}`,
  },
];

for (const { found, cause, method, path, body } of REGRESSIONS) {
  test.serial(`regression (${found}): ${method} ${path.slice(0, 60)} is refused with a 4xx; ${cause.slice(0, 80)}`, async (t) => {
    const status = await probe(method, concretePath(path), body?.replace(/\{(\w+)\}/g, (_, field: string) => context.fixtures[field]![0]!));
    t.true(status >= 400 && status < 500, String(status));
  });
}

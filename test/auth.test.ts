import test from 'ava';
import { createDb } from '../db/knex.ts';
import { createLogger } from '../shared/logger.ts';
import { revokeApiKey } from '../db/accounts.ts';
import { withDatabase } from './helpers/database.ts';
import { useHarness } from './helpers/harness.ts';

const h = useHarness(test);

test('no X-API-Key header is a 400 "No token found"', async (t) => {
  const { status, body } = await h.app.api().get('/items');
  t.is(status, 400);
  t.deepEqual(body, { error: 'No token found' });
});

test('an unknown key is a 401 "Invalid API key"', async (t) => {
  const { status, body } = await h.app.api('srk_not-a-real-key').get('/items');
  t.is(status, 401);
  t.deepEqual(body, { error: 'Invalid API key' });
});

test('a revoked key answers 401 at once', async (t) => {
  const account = await h.newAccount();
  t.is((await account.api.get('/items')).status, 200);
  const [key] = await h.db('api_keys').where({ account_id: account.accountId }).select('id');
  await revokeApiKey(h.db, key.id);
  const { status, body } = await account.api.get('/items');
  t.is(status, 401);
  t.deepEqual(body, { error: 'Invalid API key' });
});

test('a key sent as Authorization: Bearer never authenticates, and the error names X-API-Key', async (t) => {
  const account = await h.newAccount();
  const { status, body } = await h.app.api().get('/items', { headers: { Authorization: `Bearer ${account.key}` } });
  t.is(status, 401);
  t.regex(body.error, /X-API-Key/);
  // With a valid X-API-Key, an Authorization header changes nothing.
  t.is((await account.api.get('/items', { headers: { Authorization: 'Bearer whatever' } })).status, 200);
});

test('the key records when it was last used', async (t) => {
  const account = await h.newAccount();
  const [before] = await h.db('api_keys').where({ account_id: account.accountId }).select('last_used_at');
  t.is(before.last_used_at, null);
  await account.api.get('/items');
  const [after] = await h.db('api_keys').where({ account_id: account.accountId }).select('last_used_at');
  // Timestamps come from the data layer as ISO strings (db/timestamps.ts).
  t.regex(after.last_used_at, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);
});

test('keys are stored only as a hash', async (t) => {
  const account = await h.newAccount();
  const rows = await h.db('api_keys').where({ account_id: account.accountId });
  t.is(rows.length, 1);
  t.false(JSON.stringify(rows).includes(account.key));
  t.regex(rows[0].key_hash, /^[0-9a-f]{64}$/);
});

test('every response carries X-Request-Id: the caller\'s when sane, a fresh one otherwise', async (t) => {
  const account = await h.newAccount();
  const echoed = await account.api.get('/items', { headers: { 'X-Request-Id': 'trace-abc.123' } });
  t.is(echoed.headers.get('x-request-id'), 'trace-abc.123');
  const replaced = await account.api.get('/items', { headers: { 'X-Request-Id': 'bad id with spaces <script>' } });
  t.regex(replaced.headers.get('x-request-id') ?? '', /^[0-9a-f-]{36}$/);
  for (const response of [await h.app.api().get('/items'), await h.app.api().get('~/health'), await h.app.api().get('~/nowhere')]) {
    t.truthy(response.headers.get('x-request-id'));
  }
});

test('unknown routes are 404 JSON, inside and outside the prefix', async (t) => {
  const account = await h.newAccount();
  const inside = await account.api.get('/nothing-here');
  t.is(inside.status, 404);
  t.regex(inside.body.error, /No route/);
  const v1 = await account.api.get('~/rest/api/v1/items');
  t.is(v1.status, 404);
  t.is(typeof v1.body.error, 'string');
});

test('a known path with the wrong method is a 405 with Allow', async (t) => {
  const account = await h.newAccount();
  const { status, body, headers } = await account.api.request('PUT', '/items');
  t.is(status, 405);
  t.regex(body.error, /PUT/);
  t.regex(headers.get('allow') ?? '', /GET/);
  t.regex(headers.get('allow') ?? '', /POST/);
});

test('malformed JSON is a 400 naming the body', async (t) => {
  const account = await h.newAccount();
  const { status, body } = await account.api.post('/items', '{"sku": "A",');
  t.is(status, 400);
  t.is(body.error, 'Validation failed');
  t.is(body.errors[0].path, 'body');
  t.regex(body.errors[0].message, /not valid JSON/);
});

test('a JSON body that is not an object is a 400', async (t) => {
  const account = await h.newAccount();
  const { status, body } = await account.api.post('/items', [1, 2]);
  t.is(status, 400);
  t.deepEqual(body.errors, [{ path: 'body', message: 'must be an object' }]);
});

test('a body that is not JSON is a 415', async (t) => {
  const account = await h.newAccount();
  const { status, body } = await account.api.post('/items', 'sku=A&name=B', { headers: { 'Content-Type': 'application/x-www-form-urlencoded' } });
  t.is(status, 415);
  t.regex(body.error, /application\/json/);
  t.is((await account.api.post('/items', 'plain', { headers: { 'Content-Type': 'text/plain' } })).status, 415);
});

test('a body over the limit is a 413 and nothing is written', async (t) => {
  const small = await h.startApp({ bodyLimitBytes: 1024 });
  const account = await h.newAccount();
  const { status, body } = await small.api(account.key).post('/items', { sku: 'BIG', name: 'Big', description: 'x'.repeat(2000) });
  t.is(status, 413);
  t.is(typeof body.error, 'string');
  t.is((await account.api.get('/items')).body.data.length, 0);
});

test('a fault is a 500 with the request id and no stack; /health says 503', async (t) => {
  // A database that answers but does not exist: an unexpected fault, not an outage.
  const broken = createDb(withDatabase(h.databaseUrl, 'no_such_database'), 1, createLogger('silent'));
  const app = await h.startApp({}, { db: broken });
  const { status, body, headers } = await app.api('srk_anything').get('/items');
  t.is(status, 500);
  t.deepEqual(body, { error: 'Internal server error', requestId: headers.get('x-request-id') });
  const health = await app.api().get('~/health');
  t.is(health.status, 503);
  t.is(health.body.status, 'unavailable');
  t.is((await h.app.api().get('~/health')).status, 200);
  t.deepEqual((await h.app.api().get('~/health')).body, { status: 'ok' });
  await broken.destroy();
});

test('an unreachable database is a fast 503 with Retry-After, not a 500 or a hang', async (t) => {
  const unreachable = createDb('postgres://nobody:wrong@127.0.0.1:1/none', 1, createLogger('silent'));
  const app = await h.startApp({}, { db: unreachable });
  const started = Date.now();
  const { status, body, headers } = await app.api('srk_anything').post('/items', { sku: 'DOWN', name: 'Written while down' });
  t.is(status, 503);
  t.deepEqual(body, { error: 'The database is unavailable; retry shortly' });
  t.is(headers.get('retry-after'), '2');
  t.true(Date.now() - started < 3000, `answered in ${Date.now() - started} ms`);
  t.is((await app.api().get('~/health')).status, 503);
  await unreachable.destroy();
});

test('with REQUIRE_HTTPS behind a trusted proxy, plain HTTP is a 403 and the key is not looked up', async (t) => {
  const app = await h.startApp({ requireHttps: true, trustProxy: true });
  const account = await h.newAccount();
  const plain = await app.api(account.key).get('/items', { headers: { 'X-Forwarded-Proto': 'http' } });
  t.is(plain.status, 403);
  t.deepEqual(plain.body, { error: 'HTTPS required' });
  const [key] = await h.db('api_keys').where({ account_id: account.accountId }).select('last_used_at');
  t.is(key.last_used_at, null, 'the key was never looked up');
  const secure = await app.api(account.key).get('/items', { headers: { 'X-Forwarded-Proto': 'https' } });
  t.is(secure.status, 200);
});

test('logs are JSON lines and never contain a key or an Authorization value', async (t) => {
  const app = await h.startApp();
  const account = await h.newAccount();
  await app.api(account.key).get('/items', { headers: { Authorization: 'Bearer secret-token-value' } });
  await app.api().get('/items', { headers: { 'X-API-Key': 'srk_wrong-key-value' } });
  t.true(app.logs.length >= 2);
  for (const line of app.logs) {
    const entry = JSON.parse(line);
    t.is(typeof entry.requestId, 'string');
    t.false(line.includes(account.key));
    t.false(line.includes('secret-token-value'));
    t.false(line.includes('srk_wrong-key-value'));
  }
  t.true(app.logs.some((line) => JSON.parse(line).status === 401));
});

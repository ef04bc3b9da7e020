import test from 'ava';
import { createDb } from '../db/knex.ts';
import { claimSize } from '../server/middleware/rate-limit.ts';
import { useHarness } from './helpers/harness.ts';

// The defaults, counted exactly: each test starts its own app, so each has fresh counters.
const h = useHarness(test);
const DEFAULTS = { rateLimitPerKey: 100, rateLimitPerIp: 20, rateLimitWindowMs: 60_000 };

test('a key gets 100 requests a minute; the 101st is a 429 with Retry-After', async (t) => {
  const app = await h.startApp(DEFAULTS);
  const account = await h.newAccount();
  const api = app.api(account.key);
  for (let i = 1; i <= 100; i += 1) {
    const response = await api.get('/items');
    if (response.status !== 200) t.fail(`request ${i} answered ${response.status}`);
    if (i === 1 || i === 100) {
      t.is(response.headers.get('x-ratelimit-limit'), '100');
      t.is(response.headers.get('x-ratelimit-remaining'), String(100 - i));
      const reset = Number(response.headers.get('x-ratelimit-reset'));
      t.true(Number.isInteger(reset) && reset > Date.now() / 1000 && reset <= Date.now() / 1000 + 61);
    }
  }
  const limited = await api.get('/items');
  t.is(limited.status, 429);
  t.deepEqual(limited.body, { error: 'Rate limit exceeded' });
  const retryAfter = Number(limited.headers.get('retry-after'));
  t.true(retryAfter >= 1 && retryAfter <= 60, `Retry-After ${retryAfter}`);
  t.is(limited.headers.get('x-ratelimit-remaining'), '0');

  // Another key is counted on its own.
  const other = await h.newAccount();
  t.is((await app.api(other.key).get('/items')).status, 200);
});

test('without a key: 20 per IP, then 429 rather than 400 (the limit is checked before authentication)', async (t) => {
  const app = await h.startApp(DEFAULTS);
  for (let i = 1; i <= 20; i += 1) {
    const response = await app.api().get('/items');
    if (response.status !== 400) t.fail(`request ${i} answered ${response.status}`);
    if (i === 20) t.is(response.headers.get('x-ratelimit-remaining'), '0');
  }
  const limited = await app.api().get('/items');
  t.is(limited.status, 429);
  t.deepEqual(limited.body, { error: 'Rate limit exceeded' });
  t.truthy(limited.headers.get('retry-after'));
});

test('an invalid key counts against the IP; a valid key from the same IP is unaffected', async (t) => {
  const app = await h.startApp(DEFAULTS);
  for (let i = 1; i <= 10; i += 1) t.is((await app.api().get('/items')).status, 400);
  for (let i = 1; i <= 10; i += 1) t.is((await app.api('srk_invalid').get('/items')).status, 401);
  t.is((await app.api('srk_invalid').get('/items')).status, 429);
  t.is((await app.api().get('/items')).status, 429);

  const account = await h.newAccount();
  const valid = await app.api(account.key).get('/items');
  t.is(valid.status, 200);
  t.is(valid.headers.get('x-ratelimit-limit'), '100');
});

test('limits and window come from the configuration; a new window resets the count', async (t) => {
  const app = await h.startApp({ rateLimitPerKey: 2, rateLimitPerIp: 1, rateLimitWindowMs: 1000 });
  const account = await h.newAccount();
  const api = app.api(account.key);
  t.is((await api.get('/items')).status, 200);
  t.is((await api.get('/items')).status, 200);
  t.is((await api.get('/items')).status, 429);
  t.is((await app.api().get('/items')).status, 400);
  t.is((await app.api().get('/items')).status, 429);
  await new Promise((resolve) => setTimeout(resolve, 1100));
  t.is((await api.get('/items')).status, 200);
});

test('health and the docs have a per-IP limit of their own, apart from the API\'s', async (t) => {
  const app = await h.startApp({ rateLimitPerIp: 1, rateLimitPublicPerIp: 4 });
  for (let i = 0; i < 2; i += 1) {
    t.is((await app.api().get('~/health')).status, 200);
    t.is((await app.api().get('/openapi.json')).status, 200);
  }
  const limited = await app.api().get('~/health');
  t.is(limited.status, 429);
  t.deepEqual(limited.body, { error: 'Rate limit exceeded' });
  t.truthy(limited.headers.get('retry-after'));
  t.is((await app.api().get('/docs/assets/x/constructor')).status, 429, 'unknown public paths count too');
  t.is((await app.api().get('/items')).status, 400, 'the API counts apart: its one keyless request is still there');
});

test('behind TRUST_PROXY the client is the address the proxy appended: forged X-Forwarded-For entries neither escape the limit nor lock a victim out', async (t) => {
  const app = await h.startApp({ ...DEFAULTS, trustProxy: true });
  const from = (forwarded: string) => app.api().get('/items', { headers: { 'X-Forwarded-For': forwarded } });

  // An attacker at 198.51.100.7 writes a new address before the one the proxy appends, and the victim's.
  for (let i = 0; i < 20; i += 1) t.is((await from(`10.0.${i}.1, 203.0.113.9, 198.51.100.7`)).status, 400);
  t.is((await from('10.9.9.9, 198.51.100.7')).status, 429, 'a forged first entry does not make a new client');
  t.is((await from('203.0.113.9')).status, 400, 'the victim, named in the forged entries, is not locked out');

  const twoHops = await h.startApp({ ...DEFAULTS, trustProxy: true, trustProxyHops: 2 });
  for (let i = 0; i < 20; i += 1) await twoHops.api().get('/items', { headers: { 'X-Forwarded-For': `10.0.0.${i}, 192.0.2.5, 172.16.0.1` } });
  t.is((await twoHops.api().get('/items', { headers: { 'X-Forwarded-For': '10.1.1.1, 192.0.2.5, 172.16.0.1' } })).status, 429, 'two hops: the second address from the end');
  t.true(twoHops.logs.some((line) => line.includes('"ip":"192.0.2.5"')), 'the request log names the client so found');
});

test('an unknown key is looked up once, not on every request: limited retries with a bad key cost no statements', async (t) => {
  const db = createDb(h.databaseUrl, 2);
  let lookups = 0;
  db.on('query', (query: { sql: string }) => { if (query.sql.includes('api_keys')) lookups += 1; });
  const app = await h.startApp(DEFAULTS, { db });
  try {
    const statuses = new Set<number>();
    for (let i = 0; i < 50; i += 1) statuses.add((await app.api('srk_not_a_key').get('/items')).status);
    t.deepEqual([...statuses].sort(), [401, 429]);
    t.is(lookups, 1);
  } finally {
    await app.close();
    await db.destroy();
  }
});

test('the counter store stays bounded under a stream of distinct clients', async (t) => {
  const { BoundedLimitStore } = await import('../server/middleware/rate-limit.ts');
  const store = new BoundedLimitStore(100);
  const later = Date.now() / 1000 + 60;
  for (let i = 0; i < 1000; i += 1) store.set(`ip:${i}`, { reset: later });
  t.true(store.size <= 100);
  t.true(store.has('ip:999'), 'the newest client is kept');
  const expired = new BoundedLimitStore(10);
  for (let i = 0; i < 10; i += 1) expired.set(`old:${i}`, { reset: 1 });
  expired.set('new', { reset: later });
  t.deepEqual([...expired.keys()], ['new'], 'expired windows go first');
});

test('a key\'s limit holds across web processes: two apps on one database, alternating, answer exactly the limit', async (t) => {
  const apps = await Promise.all([h.startApp({ ...DEFAULTS, rateLimitPerKey: 10 }), h.startApp({ ...DEFAULTS, rateLimitPerKey: 10 })]);
  const account = await h.newAccount();
  const statuses: number[] = [];
  for (let i = 0; i < 16; i += 1) statuses.push((await apps[i % 2]!.api(account.key).get('/locations')).status);

  t.deepEqual(statuses, [...Array(10).fill(200), ...Array(6).fill(429)]);
  const memory = await h.startApp({ ...DEFAULTS, rateLimitPerKey: 10, rateLimitStore: 'memory' });
  t.is((await memory.api(account.key).get('/locations')).status, 200, 'RATE_LIMIT_STORE=memory counts in the process');
});

test('large limits are claimed a few requests at a time: never more than the limit, at most a claim less per process', async (t) => {
  t.deepEqual([100, 199, 1000, 5000, 1_000_000_000].map(claimSize), [1, 1, 10, 50, 50]);
  const apps = await Promise.all([h.startApp({ ...DEFAULTS, rateLimitPerKey: 1000 }), h.startApp({ ...DEFAULTS, rateLimitPerKey: 1000 })]);
  const account = await h.newAccount();
  let allowed = 0;
  for (let i = 0; i < 1040; i += 1) if ((await apps[i % 2]!.api(account.key).get('/locations')).status !== 429) allowed += 1;
  t.true(allowed <= 1000 && allowed >= 1000 - 2 * (claimSize(1000) - 1), `allowed ${allowed}`);
  const row = await h.db('rate_limits').where({ key: `key:${(await h.db('api_keys').where({ account_id: account.accountId }).first('id')).id}` }).first('points');
  t.true(row.points >= 1000, 'the shared count reached the limit');
});

test.serial('while the counter store fails, keys are counted in memory, logged once; once it is back, shared again, logged once', async (t) => {
  const app = await h.startApp({ ...DEFAULTS, rateLimitPerKey: 5 });
  const account = await h.newAccount();
  const api = app.api(account.key);
  t.is((await api.get('/locations')).status, 200);

  await h.db.raw('alter table rate_limits rename to rate_limits_away');
  const away = [];
  try {
    for (let i = 0; i < 6; i += 1) away.push((await api.get('/locations')).status);
  } finally {
    await h.db.raw('alter table rate_limits_away rename to rate_limits');
  }
  const back = [];
  for (let i = 0; i < 5; i += 1) back.push((await api.get('/locations')).status);

  t.deepEqual(away, [200, 200, 200, 200, 200, 429], 'a fresh count in memory: 5 allowed, never a 500');
  t.deepEqual(back, [200, 200, 200, 200, 429], 'the shared count again: 1 before the failure, 4 more');
  const said = (text: string) => app.logs.filter((line) => line.includes(text)).length;
  t.is(said('the counter store failed'), 1);
  t.is(said('counting in PostgreSQL again'), 1);
});

import test from 'ava';
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

test('health and the docs are not rate limited', async (t) => {
  const app = await h.startApp({ rateLimitPerIp: 1 });
  for (let i = 0; i < 5; i += 1) {
    t.is((await app.api().get('~/health')).status, 200);
    t.is((await app.api().get('/openapi.json')).status, 200);
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

// Webhook subscriptions through the API: what may be registered, what is shown, who sees what; and /events.
import test from 'ava';
import { recordEvent } from '../db/events.ts';
import type { ResolveHost } from '../shared/webhook-urls.ts';
import type { Client } from './helpers/client.ts';
import { useHarness, type RunningApp } from './helpers/harness.ts';
import { eventually } from './helpers/receiver.ts';

const h = useHarness(test);

const NAMES: Record<string, string[]> = {
  'hooks.example.com': ['93.184.216.34', '2606:2800:220:1:248:1893:25c8:1946'],
  'loopback.example.com': ['127.0.0.1'],
  'private.example.com': ['93.184.216.34', '10.1.2.3'],
  'metadata.example.com': ['169.254.169.254'],
  'cgnat.example.com': ['100.64.12.1'],
  'ula.example.com': ['fd00:ec2::254'],
  'mapped.example.com': ['::ffff:7f00:1'],
};
const resolveHost: ResolveHost = async (host) => {
  const addresses = NAMES[host];
  if (!addresses) throw Object.assign(new Error(`getaddrinfo ENOTFOUND ${host}`), { code: 'ENOTFOUND' });
  return addresses;
};

let app: RunningApp;
test.before(async () => {
  app = await h.startApp({}, { resolveHost });
});

async function account(): Promise<{ api: Client; accountId: string }> {
  const created = await h.newAccount();
  return { api: app.api(created.key), accountId: created.accountId };
}

const GOOD = 'https://hooks.example.com/stockroom';

/**
 * /events shows an event once no older transaction is open anywhere on the PostgreSQL server, and the test files
 * share one: another file's open transaction can hold a committed event back for a moment. Waits for `count`.
 */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
async function visibleEvents(api: Client, query: string, count: number): Promise<any[]> {
  let data: unknown[] = [];
  await eventually(async () => (data = (await api.get(`/events${query}`)).body.data).length >= count);
  return data;
}

test('registration answers 201 with a whsec_ secret shown only then, stored encrypted', async (t) => {
  const { api } = await account();
  const created = await api.post('/webhooks', { url: GOOD, events: ['sales_order.created', 'stock.adjusted', 'stock.adjusted'] });
  t.is(created.status, 201);
  t.deepEqual(Object.keys(created.body).sort(), ['createdAt', 'disabledReason', 'enabled', 'events', 'id', 'secret', 'updatedAt', 'url']);
  t.like(created.body, { url: GOOD, events: ['sales_order.created', 'stock.adjusted'], enabled: true, disabledReason: null });
  t.regex(created.body.secret, /^whsec_[A-Za-z0-9+/]{43}=$/);

  const fetched = await api.get(`/webhooks/${created.body.id}`);
  t.is(fetched.body.secret, undefined);
  t.deepEqual((await api.get('/webhooks')).body.data, [fetched.body]);

  const row = await h.db('webhooks').where({ id: created.body.id }).first();
  const secretBytes = created.body.secret.slice('whsec_'.length);
  t.false(JSON.stringify(row).includes(secretBytes), 'the database does not hold the secret in the clear');
  t.true(app.logs.every((line) => !line.includes(secretBytes)), 'nor do the logs');

  t.deepEqual((await api.post('/webhooks', { url: GOOD, events: ['*', 'item.created'] })).body.events, ['*']);
});

test('unsafe or unusable URLs are 400s naming the problem', async (t) => {
  const { api } = await account();
  const cases: Array<[string, RegExp]> = [
    ['http://hooks.example.com/x', /must be an https:\/\/ URL/],
    ['https://user:pass@hooks.example.com/x', /must not carry credentials/],
    ['ftp://hooks.example.com/x', /https/],
    ['not a url', /absolute URL/],
    ['https://127.0.0.1/x', /127\.0\.0\.1 is a loopback, private/],
    ['https://10.0.0.8/x', /non-public/],
    ['https://[::1]/x', /non-public/],
    ['https://169.254.169.254/latest/meta-data', /non-public/],
    ['https://loopback.example.com/x', /resolves to 127\.0\.0\.1/],
    ['https://private.example.com/x', /resolves to 10\.1\.2\.3/],
    ['https://metadata.example.com/x', /resolves to 169\.254\.169\.254/],
    ['https://cgnat.example.com/x', /resolves to 100\.64\.12\.1/],
    ['https://ula.example.com/x', /resolves to fd00:ec2::254/],
    ['https://mapped.example.com/x', /resolves to ::ffff:7f00:1/],
    ['https://nowhere.example.com/x', /does not resolve/],
  ];
  for (const [url, message] of cases) {
    const { status, body } = await api.post('/webhooks', { url, events: ['*'] });
    t.is(status, 400, url);
    t.deepEqual(body.errors.map((e: { path: string }) => e.path), ['url'], url);
    t.regex(body.errors[0].message, message, url);
  }
  t.is((await api.get('/webhooks')).body.data.length, 0);
});

test('IPv6 forms that embed an IPv4 address, and ports other than 443 and 8443, are refused at registration and PATCH; URLs are stored normalised', async (t) => {
  const { api } = await account();
  const refused: Array<[string, RegExp]> = [
    ['https://[::127.0.0.1]/', /non-public/], // IPv4-compatible (::/96)
    ['https://[::a9fe:a9fe]/', /non-public/], // 169.254.169.254, IPv4-compatible
    ['https://[::ffff:0:127.0.0.1]/', /non-public/], // SIIT (::ffff:0:0:0/96)
    ['https://[2002:7f00:1::]/', /non-public/], // 6to4 of 127.0.0.1
    ['https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/', /non-public/], // Teredo
    ['https://[::ffff:127.0.0.1]/', /non-public/], // IPv4-mapped, judged by its IPv4
    ['https://hooks.example.com:22/x', /must use port 443 or 8443 \(not 22\)/],
    ['https://hooks.example.com:6379/x', /port/],
  ];
  for (const [url, message] of refused) {
    const { status, body } = await api.post('/webhooks', { url, events: ['*'] });
    t.is(status, 400, url);
    t.regex(body.errors[0].message, message, url);
  }
  const created = await api.post('/webhooks', { url: 'https://HOOKS.example.com:443/a/../stockroom', events: ['*'] });
  t.is(created.body.url, 'https://hooks.example.com/stockroom');
  t.is((await api.post('/webhooks', { url: 'https://hooks.example.com:8443/x', events: ['*'] })).status, 201);
  for (const [url] of refused) {
    t.is((await api.patch(`/webhooks/${created.body.id}`, { url })).status, 400, url);
  }
  t.is((await api.patch(`/webhooks/${created.body.id}`, { url: 'https://Hooks.Example.com/other' })).body.url, 'https://hooks.example.com/other');
});

test('every problem of a body is named at once; unknown event kinds too', async (t) => {
  const { api } = await account();
  const { status, body } = await api.post('/webhooks', { url: 'https://loopback.example.com/x', events: ['order.shipped', 'stock.adjusted', 7] });
  t.is(status, 400);
  t.deepEqual(body.errors.map((e: { path: string }) => e.path).sort(), ['events[0]', 'events[2]', 'url']);
  t.deepEqual((await api.post('/webhooks', { url: GOOD, events: [] })).body.errors.map((e: { path: string }) => e.path), ['events']);
  t.deepEqual((await api.post('/webhooks', { url: GOOD })).body.errors, [{ path: 'events', message: 'is required' }]);
  t.deepEqual((await api.post('/webhooks', { url: GOOD, events: ['webhook.ping'] })).body.errors.map((e: { path: string }) => e.path), ['events[0]']);
  t.deepEqual((await api.post('/webhooks', { url: GOOD, events: ['*'], secret: 'mine' })).body.errors, [{ path: 'secret', message: 'is not an allowed field' }]);
});

test('ALLOW_INSECURE_WEBHOOK_URLS admits http:// and local receivers, never credentials', async (t) => {
  const insecure = await h.startApp({ allowInsecureWebhookUrls: true }, { resolveHost });
  const { key } = await h.newAccount();
  const api = insecure.api(key);
  t.is((await api.post('/webhooks', { url: 'http://localhost:8080/hook', events: ['*'] })).status, 201);
  t.is((await api.post('/webhooks', { url: 'http://10.0.0.8/hook', events: ['*'] })).status, 201);
  t.is((await api.post('/webhooks', { url: 'http://a:b@localhost/hook', events: ['*'] })).status, 400);
});

test('PATCH changes url, events and enabled; DELETE removes; the URL rules apply to a change too', async (t) => {
  const { api } = await account();
  const { body: hook } = await api.post('/webhooks', { url: GOOD, events: ['item.created'] });
  const changed = await api.patch(`/webhooks/${hook.id}`, { url: `${GOOD}/v2`, events: ['item.updated'] });
  t.like(changed.body, { url: `${GOOD}/v2`, events: ['item.updated'], enabled: true });
  t.true(changed.body.updatedAt >= hook.updatedAt);
  t.like((await api.patch(`/webhooks/${hook.id}`, { enabled: false })).body, { enabled: false, disabledReason: 'manual' });
  t.like((await api.patch(`/webhooks/${hook.id}`, { enabled: true })).body, { enabled: true, disabledReason: null });
  t.deepEqual((await api.patch(`/webhooks/${hook.id}`, { url: 'https://loopback.example.com/' })).body.errors.map((e: { path: string }) => e.path), ['url']);
  t.is((await api.patch(`/webhooks/${hook.id}`, {})).body.url, `${GOOD}/v2`);

  const deleted = await api.delete(`/webhooks/${hook.id}`);
  t.is(deleted.status, 204);
  t.is(deleted.body, '');
  t.is((await api.get(`/webhooks/${hook.id}`)).status, 404);
  t.is((await api.delete(`/webhooks/${hook.id}`)).status, 404);
});

test("another account's webhook is a 404 everywhere", async (t) => {
  const owner = await account();
  const stranger = await account();
  const { body: hook } = await owner.api.post('/webhooks', { url: GOOD, events: ['*'] });
  const answers = await Promise.all([
    stranger.api.get(`/webhooks/${hook.id}`),
    stranger.api.patch(`/webhooks/${hook.id}`, { enabled: false }),
    stranger.api.delete(`/webhooks/${hook.id}`),
    stranger.api.get(`/webhooks/${hook.id}/deliveries`),
    stranger.api.post(`/webhooks/${hook.id}/ping`),
    stranger.api.post(`/webhooks/${hook.id}/rotate-secret`),
    stranger.api.post(`/webhooks/${hook.id}/redeliver`, { eventId: hook.id }),
    stranger.api.get('/webhooks/not-a-uuid'),
    stranger.api.post('/webhooks/not-a-uuid/rotate-secret'),
  ]);
  for (const answer of answers) {
    t.is(answer.status, 404);
    t.is(answer.body.error, 'Webhook not found');
  }
  t.deepEqual((await stranger.api.get('/webhooks')).body.data, []);
  t.like((await owner.api.get(`/webhooks/${hook.id}`)).body, { enabled: true });
});

test('/events lists the account\'s events oldest first, filtered by kind, paged with `after`', async (t) => {
  const { api, accountId } = await account();
  const other = await account();
  for (const sku of ['A', 'B', 'C']) await api.post('/items', { sku, name: sku });
  const item = await api.post('/items', { sku: 'D', name: 'D' });
  await api.patch(`/items/${item.body.id}`, { name: 'Dee' });
  await other.api.post('/items', { sku: 'X', name: 'Not yours' });

  const all = await visibleEvents(api, '', 5);
  t.deepEqual(all.map((e: { type: string }) => e.type), ['item.created', 'item.created', 'item.created', 'item.created', 'item.updated']);
  t.deepEqual(all.map((e: { data: { sku: string } }) => e.data.sku), ['A', 'B', 'C', 'D', 'D']);
  t.deepEqual(Object.keys(all[0]), ['id', 'type', 'createdAt', 'data']);
  t.deepEqual(Object.keys(all[0].data), Object.keys(item.body), 'data is the record as the API returns it, in its order');

  const updates = await api.get('/events?types=item.updated,stock.adjusted');
  t.deepEqual(updates.body.data.map((e: { id: string }) => e.id), [all[4].id]);

  const first = await api.get('/events?limit=2');
  t.deepEqual(first.body.data.map((e: { id: string }) => e.id), [all[0].id, all[1].id]);
  const next = /<([^>]+)>; rel="next"/.exec(first.headers.get('link') ?? '')![1]!;
  t.regex(next, new RegExp(`after=${all[1].id}`));
  t.deepEqual((await api.get(next)).body.data.map((e: { id: string }) => e.id), [all[2].id, all[3].id]);
  t.deepEqual((await api.get(`/events?after=${all[3].id}`)).body.data.map((e: { id: string }) => e.id), [all[4].id]);
  t.deepEqual((await api.get('/events?page=2&limit=2')).body.data.map((e: { id: string }) => e.id), [all[2].id, all[3].id]);

  t.is((await api.get('/events?types=item.created,order.shipped')).status, 400);
  t.deepEqual((await api.get('/events?after=nope')).body.errors.map((e: { path: string }) => e.path), ['after']);
  const foreign = await h.db('events').whereNot({ account_id: accountId }).first('id');
  t.is((await api.get(`/events?after=${foreign.id}`)).status, 400);
});

test('/events never lets a poller skip an event whose transaction commits late', async (t) => {
  const { api, accountId } = await account();
  await api.post('/items', { sku: 'BEFORE', name: 'Before' });
  const [seen] = await visibleEvents(api, '', 1);

  // A change that has recorded its event but not committed yet; meanwhile another change commits.
  let commit!: () => void;
  const released = new Promise<void>((resolve) => { commit = resolve; });
  let recorded!: () => void;
  const hasRecorded = new Promise<void>((resolve) => { recorded = resolve; });
  const slow = h.db.transaction(async (trx) => {
    await recordEvent(trx, accountId, { type: 'item.updated', data: { sku: 'SLOW' } });
    recorded();
    await released;
  });
  await hasRecorded;
  await api.post('/items', { sku: 'FAST', name: 'Committed first' });

  const meanwhile = (await api.get(`/events?after=${seen!.id}`)).body.data;
  t.deepEqual(meanwhile, [], 'nothing newer is shown while an older transaction is open');
  commit();
  await slow;
  const after = await visibleEvents(api, `?after=${seen!.id}`, 2);
  t.deepEqual(after.map((e: { data: { sku: string } }) => e.data.sku), ['SLOW', 'FAST']);
});

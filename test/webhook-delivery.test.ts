// Webhook delivery end to end: the API records events, the real worker tasks fan them out and deliver them to
// nock receivers, and the delivery log tells what happened.
import { Writable } from 'node:stream';
import test from 'ava';
import nock from 'nock';
import { Webhook as StandardWebhook } from 'standardwebhooks';
import { Webhook as SvixWebhook } from 'svix';
import { startWorker, type Worker } from '../jobs/worker.ts';
import { encrypt } from '../shared/encryption.ts';
import { createLogger } from '../shared/logger.ts';
import { generateSecret } from '../shared/webhook-secrets.ts';
import type { ResolveHost } from '../shared/webhook-urls.ts';
import type { Client } from './helpers/client.ts';
import { TEST_KEY, testConfig, useHarness, type RunningApp } from './helpers/harness.ts';
import { eventually, receiver, type Receiver } from './helpers/receiver.ts';

const h = useHarness(test);

// Receivers live at public addresses, but for `rebind.test`, which turns private between registration and delivery.
const PUBLIC = '93.184.216.34';
const appResolve: ResolveHost = async () => [PUBLIC];
const workerResolve: ResolveHost = async (host) => (host === 'rebind.test' ? ['127.0.0.1'] : [PUBLIC]);

let app: RunningApp;
let worker: Worker;
const workerLogs: string[] = [];

test.before(async () => {
  app = await h.startApp({}, { resolveHost: appResolve });
  const sink = new Writable({ write(chunk, _encoding, done) { workerLogs.push(String(chunk)); done(); } });
  worker = await startWorker(testConfig({ webhookTimeoutMs: 1000, workerConcurrency: 10 }), h.databaseUrl, createLogger('info', 'worker', sink), {
    resolveHost: workerResolve,
    retryDelaysMs: [200, 200, 200],
  });
});
test.after.always(async () => {
  if (process.env.SHOW_WORKER_LOGS) console.log(workerLogs.join(''));
  await worker?.stop();
  nock.cleanAll();
});

interface Subscriber {
  api: Client;
  accountId: string;
  webhookId: string;
  secret: string;
  receiver: Receiver;
}

async function subscribe(events: string[] = ['*'], answer?: Parameters<typeof receiver>[0], api?: Client): Promise<Subscriber> {
  const account = api ? undefined : await h.newAccount();
  const client = api ?? app.api(account!.key);
  const target = receiver(answer);
  const created = await client.post('/webhooks', { url: target.url, events });
  if (created.status !== 201) throw new Error(`subscribe: ${created.status} ${JSON.stringify(created.body)}`);
  return { api: client, accountId: account?.accountId ?? '', webhookId: created.body.id, secret: created.body.secret, receiver: target };
}

async function createItem(api: Client, sku = 'HOOK'): Promise<string> {
  return (await api.post('/items', { sku, name: 'Hooked item' })).body.id;
}

const deliveries = async (s: Subscriber, query = '') => (await s.api.get(`/webhooks/${s.webhookId}/deliveries${query}`)).body.data;
const settle = (ms = 800) => new Promise((resolve) => setTimeout(resolve, ms));

test('each event reaches a subscribed receiver once, signed so that standardwebhooks and svix both verify it', async (t) => {
  const s = await subscribe(['item.created', 'stock.adjusted']);
  const itemId = await createItem(s.api);
  const location = await s.api.post('/locations', { name: 'Main' });
  const adjustment = await s.api.post('/stock-adjustments', { itemId, locationId: location.body.id, quantity: 5, reason: 'count' });

  const received = await s.receiver.waitFor(2);
  await settle();
  t.is(s.receiver.received.length, 2, 'no more than one delivery per event');
  const byType = Object.fromEntries(received.map((r) => [r.payload.type, r]));
  t.like(byType['item.created']!.payload.data, { id: itemId, sku: 'HOOK' });
  t.like(byType['stock.adjusted']!.payload.data, { itemId, quantity: 5, source: { type: 'stock_adjustment', id: adjustment.body.id }, stockLevel: { quantity: 5 } });

  // /events may hold events back for a moment while another test file's transaction is open.
  let events: Array<{ id: string }> = [];
  await eventually(async () => (events = (await s.api.get('/events')).body.data).length === 2);
  for (const delivery of received) {
    const event = events.find((e: { id: string }) => e.id === delivery.payload.id);
    t.truthy(event, 'the payload id is the event id that /events lists');
    t.deepEqual(Object.keys(delivery.payload), ['id', 'type', 'createdAt', 'data']);
    t.is(delivery.headers['webhook-id'], delivery.payload.id);
    t.regex(delivery.headers['user-agent']!, /^Stockroom-Webhooks\/\d+\.\d+\.\d+$/);
    t.is(delivery.headers['content-type'], 'application/json');
    t.deepEqual(new StandardWebhook(s.secret).verify(delivery.body, delivery.headers), delivery.payload);
    t.notThrows(() => new SvixWebhook(s.secret).verify(delivery.body, delivery.headers));
    t.throws(() => new StandardWebhook(s.secret).verify(delivery.body.replace(delivery.payload.id, itemId), delivery.headers));
  }
  const log = await deliveries(s);
  t.is(log.length, 2);
  t.true(log.every((d: { outcome: string; attempt: number; responseStatus: number; responseBody: string }) =>
    d.outcome === 'succeeded' && d.attempt === 1 && d.responseStatus === 200 && d.responseBody === 'ok'));
});

test('receivers not subscribed to the kind, disabled ones and other accounts get nothing', async (t) => {
  const s = await subscribe(['stock.adjusted']);
  const everything = await subscribe(['*'], undefined, s.api);
  const paused = await subscribe(['*'], undefined, s.api);
  t.is((await s.api.patch(`/webhooks/${paused.webhookId}`, { enabled: false })).body.disabledReason, 'manual');
  const stranger = await subscribe(['*']);

  await createItem(s.api);
  await everything.receiver.waitFor(1);
  await settle();
  t.is(s.receiver.received.length, 0);
  t.is(paused.receiver.received.length, 0);
  t.is(stranger.receiver.received.length, 0);
  t.is(everything.receiver.received.length, 1);
});

test('a 500 is retried with the same webhook-id; both attempts are in the log, newest first', async (t) => {
  const s = await subscribe(['*'], (n) => (n === 1 ? [500, 'database is down'] : [204]));
  await createItem(s.api);
  const [first, second] = await s.receiver.waitFor(2);
  t.is(first!.headers['webhook-id'], second!.headers['webhook-id']);
  await eventually(async () => (await deliveries(s)).length === 2);
  const log = await deliveries(s);
  t.like(log[0], { attempt: 2, outcome: 'succeeded', responseStatus: 204, eventId: first!.payload.id, eventType: 'item.created' });
  t.like(log[1], { attempt: 1, outcome: 'failed', responseStatus: 500, responseBody: 'database is down', error: 'HTTP 500' });
  t.deepEqual((await deliveries(s, '?outcome=failed')).map((d: { attempt: number }) => d.attempt), [1]);
  t.is((await deliveries(s, `?eventId=${first!.payload.id}`)).length, 2);
  t.is((await deliveries(s, '?eventId=00000000-0000-4000-8000-000000000000')).length, 0);
});

test('a receiver that hangs past the timeout, and a redirect, are failures; redirects are not followed', async (t) => {
  const slow = await subscribe(['item.created'], async (n) => {
    if (n === 1) await new Promise((resolve) => setTimeout(resolve, 2500));
    return [200];
  });
  const elsewhere = receiver();
  const redirecting = await subscribe(['item.created'], (n) => (n === 1 ? [302, '', { Location: elsewhere.url }] : [200]), slow.api);
  await createItem(slow.api);

  await slow.receiver.waitFor(2);
  await redirecting.receiver.waitFor(2);
  await eventually(async () => (await deliveries(slow)).length === 2 && (await deliveries(redirecting)).length === 2);
  const [, timedOut] = await deliveries(slow);
  t.like(timedOut, { outcome: 'failed', responseStatus: null, error: 'timed out after 1000 ms' });
  t.true(timedOut.durationMs >= 1000 && timedOut.durationMs < 2500);
  t.like((await deliveries(redirecting))[1], { outcome: 'failed', responseStatus: 302 });
  t.is(elsewhere.received.length, 0);
});

test('410 disables the subscription (gone) and stops its retries', async (t) => {
  const s = await subscribe(['*'], () => [410, 'no such hook']);
  await createItem(s.api);
  await s.receiver.waitFor(1);
  t.true(await eventually(async () => (await s.api.get(`/webhooks/${s.webhookId}`)).body.enabled === false));
  t.like((await s.api.get(`/webhooks/${s.webhookId}`)).body, { enabled: false, disabledReason: 'gone' });
  await createItem(s.api, 'AFTER-GONE');
  await settle(1000);
  t.is(s.receiver.received.length, 1, 'no retry and nothing new');

  const enabled = await s.api.patch(`/webhooks/${s.webhookId}`, { enabled: true });
  t.like(enabled.body, { enabled: true, disabledReason: null });
});

test('429 with Retry-After waits that long before the next attempt', async (t) => {
  const arrivals: number[] = [];
  const s = await subscribe(['*'], (n) => {
    arrivals.push(Date.now());
    return n === 1 ? [429, 'slow down', { 'Retry-After': '2' }] : [200];
  });
  await createItem(s.api);
  await s.receiver.waitFor(2);
  const gap = arrivals[1]! - arrivals[0]!;
  t.true(gap >= 1900, `waited ${gap} ms, the schedule alone would wait 200`);
});

test('five days of nothing but failures disables the subscription (failing)', async (t) => {
  const s = await subscribe(['*'], () => [503]);
  await h.db('webhooks').where({ id: s.webhookId }).update({ failing_since: h.db.raw(`now() - interval '5 days 1 minute'`) });
  await createItem(s.api);
  t.true(await eventually(async () => (await s.api.get(`/webhooks/${s.webhookId}`)).body.disabledReason === 'failing'));
  await settle(600);
  t.is(s.receiver.received.length, 1);
});

test('running the fan-out or the delivery job again delivers nothing twice', async (t) => {
  const s = await subscribe(['item.created']);
  await createItem(s.api);
  const [delivery] = await s.receiver.waitFor(1);
  const eventId = delivery!.payload.id;
  await eventually(async () => (await deliveries(s)).length === 1);

  const again = (task: string, payload: object) => h.db.raw(
    'select graphile_worker.add_job(?, ?::json, job_key => ?)', [task, JSON.stringify(payload), `again:${JSON.stringify(payload)}`]);
  await again('events__dispatch', { eventId });
  await again('webhooks__deliver', { webhookId: s.webhookId, eventId, retry: 0 });
  await again('webhooks__deliver', { webhookId: s.webhookId, eventId, retry: 1 });
  t.true(await eventually(async () => (await h.db.raw(
    `select count(*)::int as n from graphile_worker.jobs where key like 'again:%'`)).rows[0].n === 0));
  await settle(300);
  t.is(s.receiver.received.length, 1);
  t.is((await deliveries(s)).length, 1);
});

test('a name that resolves to 127.0.0.1 at delivery time is refused then', async (t) => {
  const account = await h.newAccount();
  const api = app.api(account.key);
  const created = await api.post('/webhooks', { url: 'https://rebind.test/hook', events: ['*'] });
  t.is(created.status, 201, 'public when registered');
  await createItem(api);
  const s = { api, webhookId: created.body.id } as Subscriber;
  t.true(await eventually(async () => (await deliveries(s)).length >= 1));
  const [attempt] = await deliveries(s);
  t.is(attempt.outcome, 'failed');
  t.is(attempt.responseStatus, null);
  t.regex(attempt.error, /refused to connect: rebind\.test resolves to 127\.0\.0\.1/);
});

test('a URL registered before the rules tightened (an IPv6 form of 127.0.0.1, port 22) is refused at delivery', async (t) => {
  // Setup: subscriptions as older code could have stored them; registration refuses both today.
  const account = await h.newAccount();
  const api = app.api(account.key);
  const webhookIds: string[] = [];
  for (const url of ['https://[::7f00:1]/hook', 'https://hooks.example.com:22/hook']) {
    const [row] = await h.db('webhooks').insert({
      account_id: account.accountId, url, events: ['*'], secret_encrypted: encrypt(Buffer.from(TEST_KEY, 'hex'), generateSecret()),
    }).returning('id');
    webhookIds.push(row.id);
  }

  // Action
  await createItem(api);

  // Assertions
  for (const [index, webhookId] of webhookIds.entries()) {
    const s = { api, webhookId } as Subscriber;
    t.true(await eventually(async () => (await deliveries(s)).length >= 1));
    const [attempt] = await deliveries(s);
    t.is(attempt.outcome, 'failed');
    t.is(attempt.responseStatus, null);
    t.regex(attempt.error, index === 0 ? /refused to deliver: the URL .*non-public/ : /refused to deliver: the URL must use port 443 or 8443/);
  }
});

test('ping sends a signed webhook.ping to that subscription alone; /events does not list it', async (t) => {
  const s = await subscribe(['*']);
  const other = await subscribe(['*'], undefined, s.api);
  const ping = await s.api.post(`/webhooks/${s.webhookId}/ping`);
  t.is(ping.status, 202);
  const [delivery] = await s.receiver.waitFor(1);
  t.is(delivery!.payload.id, ping.body.eventId);
  t.like(delivery!.payload, { type: 'webhook.ping', data: { webhookId: s.webhookId } });
  t.deepEqual(new StandardWebhook(s.secret).verify(delivery!.body, delivery!.headers), delivery!.payload);
  await settle();
  t.is(other.receiver.received.length, 0);
  t.deepEqual((await s.api.get('/events')).body.data, []);
  t.is((await s.api.post('/webhooks/00000000-0000-4000-8000-000000000000/ping')).status, 404);
});

test('redeliver sends an acknowledged event again with the same webhook-id, as a new attempt in the log', async (t) => {
  const s = await subscribe(['item.created']);
  await createItem(s.api);
  const [first] = await s.receiver.waitFor(1);
  await eventually(async () => (await deliveries(s)).length === 1);

  const again = await s.api.post(`/webhooks/${s.webhookId}/redeliver`, { eventId: first!.payload.id });
  t.is(again.status, 202);
  t.is(again.body.eventId, first!.payload.id);
  const [, second] = await s.receiver.waitFor(2);
  t.is(second!.headers['webhook-id'], first!.headers['webhook-id']);
  t.true(await eventually(async () => (await deliveries(s)).length === 2));
  t.like((await deliveries(s))[0], { attempt: 2, outcome: 'succeeded' });

  const stranger = await h.newAccount();
  const foreignItem = await stranger.api.post('/items', { sku: 'X', name: 'Not yours' });
  const foreignEvent = await h.db('events').where({ account_id: stranger.accountId }).first('id');
  t.truthy(foreignItem.body.id);
  t.is((await s.api.post(`/webhooks/${s.webhookId}/redeliver`, { eventId: foreignEvent.id })).status, 404);
  t.is((await s.api.post(`/webhooks/${s.webhookId}/redeliver`, { eventId: 'nope' })).status, 404);
  t.is((await s.api.post(`/webhooks/${s.webhookId}/redeliver`, {})).status, 400);
});

test('during a secret rotation a receiver holding the old secret and one holding the new both verify', async (t) => {
  const s = await subscribe(['item.created']);
  const rotated = await s.api.post(`/webhooks/${s.webhookId}/rotate-secret`);
  t.is(rotated.status, 200);
  t.regex(rotated.body.secret, /^whsec_/);
  t.not(rotated.body.secret, s.secret);
  const expires = Date.parse(rotated.body.previousSecretExpiresAt) - Date.now();
  t.true(expires > 23.9 * 3600_000 && expires <= 24 * 3600_000);

  await createItem(s.api);
  const [delivery] = await s.receiver.waitFor(1);
  t.is(delivery!.headers['webhook-signature']!.split(' ').length, 2);
  for (const secret of [s.secret, rotated.body.secret]) {
    t.deepEqual(new StandardWebhook(secret).verify(delivery!.body, delivery!.headers), delivery!.payload);
    t.notThrows(() => new SvixWebhook(secret).verify(delivery!.body, delivery!.headers));
  }

  // Once the overlap is over, only the new secret signs.
  await h.db('webhooks').where({ id: s.webhookId }).update({ previous_secret_expires_at: h.db.raw(`now() - interval '1 second'`) });
  await createItem(s.api, 'LATER');
  const [, later] = await s.receiver.waitFor(2);
  t.notThrows(() => new StandardWebhook(rotated.body.secret).verify(later!.body, later!.headers));
  t.throws(() => new StandardWebhook(s.secret).verify(later!.body, later!.headers));
});

import { Writable } from 'node:stream';
import test from 'ava';
import nock from 'nock';
import { pruneEvents } from '../jobs/events__prune.ts';
import { startWorker } from '../jobs/worker.ts';
import { createLogger } from '../shared/logger.ts';
import type { ResolveHost } from '../shared/webhook-urls.ts';
import { testConfig, useHarness, type RunningApp } from './helpers/harness.ts';
import { eventually, receiver } from './helpers/receiver.ts';

const h = useHarness(test);
const resolveHost: ResolveHost = async () => ['93.184.216.34'];
const DAY = 86_400_000;
let app: RunningApp;

test.before(async () => {
  app = await h.startApp({}, { resolveHost });
});
test.after.always(() => { nock.cleanAll(); });

/** Runs the daily task as the worker would, on a clock `days` ahead of now; returns what it logged. */
async function pruneAt(days: number, batch?: number): Promise<string[]> {
  const logged: string[] = [];
  const now = new Date(Date.now() + days * DAY);
  await pruneEvents(h.db, { days: 30, now: () => now, batch }).run({}, { logger: { info: (message: string) => logged.push(message) } } as never);
  return logged;
}

const eventIds = async (accountId: string) => (await h.db('events').where({ account_id: accountId }).orderBy('seq').select('id', 'type'));

test.serial('events older than the retention go in batches with their dispatch rows and delivery log, except those still being delivered; /events?after=<deleted> is a 410', async (t) => {
  const good = receiver(() => [200, 'ok']);
  const failing = receiver(() => [500, 'down']);
  const { accountId, key } = await h.newAccount();
  const api = app.api(key);
  t.is((await api.post('/webhooks', { url: good.url, events: ['*'] })).status, 201);
  t.is((await api.post('/webhooks', { url: failing.url, events: ['stock.adjusted'] })).status, 201);
  const other = await h.newAccount();

  const items = [];
  for (let n = 0; n < 5; n += 1) items.push((await api.post('/items', { sku: `R-${n}`, name: 'Kept 30 days' })).body);
  const location = (await api.post('/locations', { name: 'Main' })).body;
  t.is((await api.post('/stock-adjustments', { itemId: items[0].id, locationId: location.id, quantity: 3, reason: 'count' })).status, 201);
  t.is((await other.api.post('/items', { sku: 'OTHER', name: 'Another account' })).status, 201);
  const events = await eventIds(accountId);
  t.is(events.length, 6);
  t.true(events.every((event) => event.id[14] === '7'), 'event ids carry when they were made (UUIDv7)');

  // The worker delivers everything to the good receiver; the failing one's retry stays scheduled far ahead.
  const sink = new Writable({ write(_chunk, _encoding, done) { done(); } });
  const worker = await startWorker(testConfig(), h.databaseUrl, createLogger('info', 'worker', sink), { resolveHost, retryDelaysMs: [3_600_000] });
  try {
    await good.waitFor(6);
    await failing.waitFor(1);
    t.true(await eventually(async () => Number((await h.db('webhook_dispatches').where({ account_id: accountId }).whereNotNull('acknowledged_at').count({ n: "*" }))[0]!.n) === 6));
  } finally {
    await worker.stop();
  }
  const adjusted = events.find((event) => event.type === 'stock.adjusted')!;
  t.true(Boolean((await h.db.raw(`select 1 from graphile_worker.jobs where key like ?`, [`webhook:%:${adjusted.id}:1`])).rows[0]), 'its retry is scheduled');

  t.deepEqual(await pruneAt(29), [], 'nothing is 30 days old yet');
  t.is((await eventIds(accountId)).length, 6);

  const logged = await pruneAt(31, 2);
  t.is(logged.length, 1);
  const pruned = Number(/^pruned (\d+) events older than 30 days$/.exec(logged[0]!)?.[1]);
  t.true(pruned >= 6, `every delivered event of both accounts went (${logged[0]})`);
  t.deepEqual((await eventIds(accountId)).map((event) => event.id), [adjusted.id], 'the event whose retry is scheduled stays');
  t.is((await eventIds(other.accountId)).length, 0);
  const dispatches = await h.db('webhook_dispatches').where({ account_id: accountId }).select('event_id');
  t.deepEqual([...new Set(dispatches.map((row) => row.event_id))], [adjusted.id]);
  const log = await h.db('webhook_deliveries').where({ account_id: accountId }).select('event_id');
  t.deepEqual([...new Set(log.map((row) => row.event_id))], [adjusted.id], 'the delivery log of deleted events went with them');

  const gone = await api.get(`/events?after=${events[0]!.id}`);
  t.is(gone.status, 410);
  t.regex(gone.body.error, /was deleted: events are kept 30 days.*resynchronise from the lists/);
  t.is(gone.body.retentionDays, 30);
  t.regex(gone.body.prunedThrough, /^\d{4}-\d\d-\d\dT/);
  // /events shows an event once every transaction older than its own has ended, in any database of the server
  // (another test file may hold one open): wait for that rather than assume it.
  let listed: string[] = [];
  await eventually(async () => (listed = (await api.get('/events')).body.data.map((event: { id: string }) => event.id)).length > 0);
  t.deepEqual(listed, [adjusted.id]);

  // An id made after the newest deleted event that is not one (now) is a 400, as before; so is any unknown id
  // for an account that never lost an event.
  t.is((await api.post('/items', { sku: 'R-later', name: 'After' })).status, 201);
  const laterEvent = (await eventIds(accountId)).at(-1)!;
  await h.db('events').where({ id: laterEvent.id }).delete();
  t.is((await api.get(`/events?after=${laterEvent.id}`)).status, 400);
  const untouched = await h.newAccount();
  t.is((await untouched.api.get(`/events?after=${events[0]!.id}`)).status, 400);
  good.stop();
  failing.stop();
});

// A worker SIGKILLed in the middle of a burst of deliveries to three subscriptions, and a new one started: every
// event reaches every subscribed receiver, and none that a receiver acknowledged (and the worker recorded) is
// sent to it again. test/worker-crash.test.ts checks the same for one receiver in `npm test`.
import test from 'ava';
import { HEARTBEAT_DEAD_MS } from '../../jobs/heartbeat.ts';
import { eventually } from '../helpers/eventually.ts';
import { useHarness } from '../helpers/harness.ts';
import { localReceiver, runConsistencyCheck, startWorkerProcess } from './support.ts';

const h = useHarness(test);
const EVENTS = 150;

test('SIGKILL during a burst to three subscriptions: all delivered after a restart, nothing acknowledged twice', async (t) => {
  t.timeout(HEARTBEAT_DEAD_MS + 120_000);
  // Setup: three receivers answering in 20 ms, a burst of EVENTS events for each.
  const receivers = await Promise.all([0, 1, 2].map(() => localReceiver(() => ({ status: 200, delayMs: 20 }))));
  t.teardown(() => { for (const r of receivers) r.close(); });
  const app = await h.startApp({ allowInsecureWebhookUrls: true });
  const account = await h.newAccount();
  const api = app.api(account.key);
  for (const receiver of receivers) t.is((await api.post('/webhooks', { url: receiver.url, events: ['item.created'] })).status, 201);
  for (let i = 0; i < EVENTS; i += 1) await api.post('/items', { sku: `BURST-${i}`, name: 'Burst item' });
  const total = EVENTS * receivers.length;
  const acked = async () => Number((await h.db('webhook_dispatches').whereNotNull('acknowledged_at').count({ n: '*' }).first())!.n);

  // Action: a worker starts on the burst and is killed a third of the way through; another one starts.
  const env = { WORKER_CONCURRENCY: '8' };
  const first = await startWorkerProcess(h.databaseUrl, env);
  t.true(await eventually(async () => (await acked()) >= total / 3, 60_000));
  first.child.kill('SIGKILL');
  await first.exited;
  const recordedBeforeKill = await h.db('webhook_dispatches').whereNotNull('acknowledged_at').select('webhook_id', 'event_id');
  const arrivedBeforeKill = receivers.reduce((sum, r) => sum + r.arrivals.size, 0);
  const killed = performance.now();
  const second = await startWorkerProcess(h.databaseUrl, env);
  t.teardown(() => { second.child.kill('SIGKILL'); });

  // Assertions: everything arrives (the dead worker's jobs once its heartbeat is overdue); what was recorded as
  // acknowledged before the kill arrived exactly once.
  t.true(await eventually(async () => (await acked()) === total, HEARTBEAT_DEAD_MS + 60_000), `${await acked()} of ${total} acknowledged`);
  const doneMs = performance.now() - killed;
  for (const receiver of receivers) t.is(receiver.acknowledged.size, EVENTS, 'every event reached every receiver');
  const sentAgain: string[] = [];
  const webhookUrls = new Map((await h.db('webhooks').where({ account_id: account.accountId }).select('id', 'url')).map((w) => [w.id, w.url]));
  for (const { webhook_id: webhookId, event_id: eventId } of recordedBeforeKill) {
    const receiver = receivers.find((r) => r.url === webhookUrls.get(webhookId))!;
    if (receiver.arrivals.get(eventId) !== 1) sentAgain.push(`${eventId} to ${webhookId}`);
  }
  t.deepEqual(sentAgain, [], 'no acknowledged delivery was sent again');
  const repeats = receivers.reduce((sum, r) => sum + [...r.arrivals.values()].filter((n) => n > 1).length, 0);
  second.child.kill('SIGTERM');
  t.is(await second.exited, 0);
  const check = await runConsistencyCheck(h.databaseUrl);
  t.is(check.code, 0, check.output);
  t.log(`before the kill: ${arrivedBeforeKill} deliveries arrived, ${recordedBeforeKill.length} recorded as acknowledged; ` +
    `after: ${total - recordedBeforeKill.length} more, all done ${Math.round(doneMs)} ms after the kill; ` +
    `${repeats} in flight at the kill arrived twice (never acknowledged before)`);
});

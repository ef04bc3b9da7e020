// One subscription's receiver hangs and another's answers slowly, with a backlog of events each: the other
// subscriptions' events are still delivered at once, because one origin holds only a share of a worker's slots.
import test from 'ava';
import { useHarness } from '../helpers/harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { localReceiver, runConsistencyCheck, startWorkerProcess } from './support.ts';

const h = useHarness(test);
const EVENTS = 40;
const TIMEOUT_MS = 5000;

test('a hanging and a slow receiver do not hold up the delivery of other subscriptions’ events', async (t) => {
  // Setup: three receivers, three subscriptions to the same events, a backlog of EVENTS events.
  const hanging = await localReceiver(() => 'hang');
  const slow = await localReceiver(() => ({ status: 200, delayMs: 2000 }));
  const fast = await localReceiver();
  t.teardown(() => { hanging.close(); slow.close(); fast.close(); });
  const app = await h.startApp({ allowInsecureWebhookUrls: true });
  const account = await h.newAccount();
  const api = app.api(account.key);
  for (const receiver of [hanging, slow, fast]) {
    t.is((await api.post('/webhooks', { url: receiver.url, events: ['item.created'] })).status, 201);
  }
  for (let i = 0; i < EVENTS; i += 1) await api.post('/items', { sku: `SLOW-${i}`, name: 'Backlog item' });

  // Action: one worker with 4 slots takes the backlog.
  const worker = await startWorkerProcess(h.databaseUrl, { WORKER_CONCURRENCY: '4', WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), SHUTDOWN_TIMEOUT_MS: '4000' });
  t.teardown(() => { worker.child.kill('SIGKILL'); });
  const started = performance.now();
  const fastDone = await eventually(() => fast.acknowledged.size === EVENTS, 20_000);
  const fastMs = performance.now() - started;

  // Assertions: the fast receiver got everything well within one receiver timeout; the hanging one holds no
  // more than its share; the slow one progresses.
  t.true(fastDone, `the fast receiver acknowledged ${fast.acknowledged.size} of ${EVENTS}`);
  t.true(fastMs < TIMEOUT_MS, `all ${EVENTS} events reached the fast receiver in ${Math.round(fastMs)} ms`);
  t.true(hanging.arrivals.size <= 1, `${hanging.arrivals.size} requests hanging at once (share: 1 of 4 slots)`);
  t.true([...fast.arrivals.values()].every((n) => n === 1), 'each event reached the fast receiver once');
  t.log(`fast receiver: ${EVENTS} events in ${Math.round(fastMs)} ms; meanwhile the slow one acknowledged ` +
    `${slow.acknowledged.size} and the hanging one held ${hanging.arrivals.size}`);

  worker.child.kill('SIGTERM');
  t.is(await worker.exited, 0);
  const check = await runConsistencyCheck(h.databaseUrl);
  t.is(check.code, 0, check.output);
});

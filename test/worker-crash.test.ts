// A worker process killed with SIGKILL in the middle of deliveries: once another worker runs, every event is
// delivered, and none that a receiver had acknowledged is sent to it again.
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import test from 'ava';
import { HEARTBEAT_DEAD_MS } from '../jobs/heartbeat.ts';
import { useHarness } from './helpers/harness.ts';
import { startProcess } from './helpers/processes.ts';
import { eventually } from './helpers/receiver.ts';

const h = useHarness(test);

const EVENTS = 24;
const ANSWERED_BEFORE_KILL = 8;

test('SIGKILL mid-delivery: another worker delivers the rest, nothing acknowledged arrives twice', async (t) => {
  t.timeout(HEARTBEAT_DEAD_MS + 60_000);
  // A local receiver: it answers the first requests at once, then holds every request until the worker dies.
  const arrivals = new Map<string, number>();
  const acknowledged = new Set<string>(); // answered 2xx before the kill
  let answered = 0;
  const held: http.ServerResponse[] = [];
  const server = http.createServer((request, response) => {
    const id = String(request.headers['webhook-id']);
    arrivals.set(id, (arrivals.get(id) ?? 0) + 1);
    request.resume();
    if (answered < ANSWERED_BEFORE_KILL) {
      answered += 1;
      response.on('finish', () => acknowledged.add(id));
      response.end('ok');
    } else {
      held.push(response);
    }
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  t.teardown(() => { server.closeAllConnections(); server.close(); });

  const app = await h.startApp({ allowInsecureWebhookUrls: true });
  const account = await h.newAccount();
  const api = app.api(account.key);
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
  t.is((await api.post('/webhooks', { url, events: ['item.created'] })).status, 201);
  for (let i = 0; i < EVENTS; i += 1) await api.post('/items', { sku: `CRASH-${i}`, name: 'Crash test item' });

  const env = { DATABASE_URL: h.databaseUrl, ALLOW_INSECURE_WEBHOOK_URLS: 'true', WEBHOOK_TIMEOUT_MS: '3000', WORKER_CONCURRENCY: '4' };
  const first = await startProcess('jobs/main.ts', 'worker started', env);
  const ackedInDb = async () => Number((await h.db('webhook_dispatches').whereNotNull('acknowledged_at').count({ n: '*' }).first())!.n);
  const underWay = await eventually(async () => (await ackedInDb()) === ANSWERED_BEFORE_KILL && held.length > 0, 20_000);
  if (!underWay) t.log(first.lines.join('\n'));
  t.true(underWay, `deliveries under way: ${await ackedInDb()} acknowledged, ${held.length} held, ${arrivals.size} arrived`);
  first.child.kill('SIGKILL');
  await first.exited;
  const deliveredBeforeKill = arrivals.size;
  t.true(deliveredBeforeKill < EVENTS, 'killed in the middle of the burst');

  answered = -Infinity;
  for (const response of held.splice(0)) response.destroy();
  const second = await startProcess('jobs/main.ts', 'worker started', env);
  t.teardown(() => second.child.kill('SIGKILL'));
  const acknowledgedBeforeKill = [...acknowledged];

  // The dead worker's jobs are released once its heartbeat is overdue; then everything arrives.
  const allDelivered = await eventually(async () => (await ackedInDb()) === EVENTS, HEARTBEAT_DEAD_MS + 40_000);
  t.true(allDelivered, `${await ackedInDb()} of ${EVENTS} events acknowledged`);
  t.is(arrivals.size, EVENTS, 'every event reached the receiver');
  for (const eventId of acknowledgedBeforeKill) t.is(arrivals.get(eventId), 1, `acknowledged event ${eventId} arrived once`);
  t.true(second.lines.some((line) => line.includes('released the jobs of workers that stopped sending heartbeats')));
  t.log(`delivered before the kill: ${deliveredBeforeKill} (${acknowledgedBeforeKill.length} acknowledged); after: ${EVENTS - acknowledgedBeforeKill.length}`);
});

// SIGTERM under load. The web process refuses new connections, finishes what it started, and exits 0 within
// SHUTDOWN_TIMEOUT_MS. The worker stops taking jobs: deliveries that finish in time are recorded, the ones that
// would not are aborted and handed on at once; nothing stays locked and nothing is acknowledged twice.
import { once } from 'node:events';
import http from 'node:http';
import net from 'node:net';
import test, { type ExecutionContext } from 'ava';
import { client } from '../helpers/client.ts';
import { useHarness } from '../helpers/harness.ts';
import { eventually } from '../helpers/eventually.ts';
import { baseUrlOf, load, localReceiver, runConsistencyCheck, sleep, startWeb, startWorkerProcess, type Behaviour } from './support.ts';

const h = useHarness(test);
const SHUTDOWN_TIMEOUT_MS = 6000;

const connects = (port: number) => new Promise<string>((resolve) => {
  const socket = net.connect(port, '127.0.0.1');
  socket.once('connect', () => { socket.destroy(); resolve('connected'); });
  socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
});

test.serial('web: SIGTERM under load finishes every request it took, refuses new connections, exits 0 in time', async (t) => {
  // Setup: the web process, an item and a location, 8 loops of adjustments over keep-alive connections.
  const account = await h.newAccount();
  const web = await startWeb(h.databaseUrl, { SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) });
  t.teardown(() => { web.child.kill('SIGKILL'); });
  const port = web.readyLine.port as number;
  const api = client(baseUrlOf(web), account.key);
  const itemId = (await api.post('/items', { sku: 'TERM', name: 'Shutdown item' })).body.id;
  const locationId = (await api.post('/locations', { name: 'Main' })).body.id;

  // A request the server has begun to read when SIGTERM comes: its body arrives only afterwards.
  const body = JSON.stringify({ itemId, locationId, quantity: 1, reason: 'in flight at SIGTERM' });
  const slow = http.request({
    host: '127.0.0.1', port, method: 'POST', path: '/rest/api/v2/stock-adjustments', agent: false,
    headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'X-API-Key': account.key },
  });
  const slowAnswered = once(slow, 'response');
  slow.write(body.slice(0, 10));
  await once(slow, 'socket').then(([socket]) => once(socket as net.Socket, 'connect'));

  let exited = false;
  void web.exited.then(() => { exited = true; });
  const failures: string[] = [];
  const running = load(8, web.exited.then(() => sleep(200)), async (n) => {
    try {
      return (await api.post('/stock-adjustments', { itemId, locationId, quantity: 1, reason: `load ${n}` })).status;
    } catch (error) {
      const cause = (error as { cause?: { code?: string; message?: string } }).cause;
      failures.push(cause?.code ?? cause?.message ?? String(error));
      await sleep(20);
      return 0;
    }
  });
  await sleep(1000);

  // Action: SIGTERM in the middle of it all.
  const signalled = performance.now();
  web.child.kill('SIGTERM');
  await sleep(300);
  const newConnection = await connects(port);
  const stillRunning = !exited;
  slow.end(body.slice(10));
  const [slowResponse] = (await slowAnswered) as [http.IncomingMessage];
  slowResponse.resume();
  const code = await web.exited;
  const exitMs = performance.now() - signalled;
  const results = await running;

  // Assertions: every answer a 201; whatever was processed was answered; refusals only at the connection level.
  t.true(stillRunning, 'the process was still finishing its in-flight request');
  t.is(newConnection, 'ECONNREFUSED', 'a new connection during the shutdown is refused');
  t.is(slowResponse.statusCode, 201, 'the request in flight at SIGTERM finished');
  t.is(code, 0, web.lines.filter((line) => /"level":[45]0/.test(line)).join('\n'));
  t.true(exitMs < SHUTDOWN_TIMEOUT_MS, `exited ${Math.round(exitMs)} ms after SIGTERM`);
  const answered = results.filter((r) => r.status !== 0);
  t.true(answered.every((r) => r.status === 201), `statuses: ${[...new Set(answered.map((r) => r.status))]}`);
  const stored = Number((await h.db('stock_adjustments').where({ account_id: account.accountId }).count({ n: '*' }).first())!.n);
  t.is(stored, answered.length + 1, 'every adjustment written was answered (and the in-flight one)');
  t.true(failures.every((f) => ['ECONNREFUSED', 'ECONNRESET', 'UND_ERR_SOCKET'].includes(f)), `failures: ${[...new Set(failures)]}`);
  t.log(`${answered.length} requests answered 201, ${failures.length} refused at the connection (${[...new Set(failures)]}); ` +
    `exit 0 ${Math.round(exitMs)} ms after SIGTERM`);
});

async function deliveryBacklog(t: ExecutionContext, behave: (id: string) => Behaviour, events: number) {
  const receiver = await localReceiver(behave);
  t.teardown(() => receiver.close());
  const app = await h.startApp({ allowInsecureWebhookUrls: true });
  const account = await h.newAccount();
  const api = app.api(account.key);
  const webhookId = (await api.post('/webhooks', { url: receiver.url, events: ['item.created'] })).body.id as string;
  for (let i = 0; i < events; i += 1) await api.post('/items', { sku: `TERM-${i}`, name: 'Backlog item' });
  const acked = async () => Number((await h.db('webhook_dispatches').where({ webhook_id: webhookId }).whereNotNull('acknowledged_at').count({ n: '*' }).first())!.n);
  const locked = async () => Number((await h.db.raw('select count(*) as n from graphile_worker.jobs where locked_at is not null')).rows[0].n);
  return { receiver, webhookId, acked, locked };
}

const WORKER_ENV = { WORKER_CONCURRENCY: '4', WEBHOOK_MAX_PER_ORIGIN: '4', SHUTDOWN_TIMEOUT_MS: String(SHUTDOWN_TIMEOUT_MS) };

test.serial('worker: SIGTERM lets running deliveries finish and record, releases nothing locked, exits 0', async (t) => {
  // Setup: 30 events for a receiver that answers after 1 s; a worker with 4 deliveries in flight.
  const { receiver, acked, locked } = await deliveryBacklog(t, () => ({ status: 200, delayMs: 1000 }), 30);
  const worker = await startWorkerProcess(h.databaseUrl, WORKER_ENV);
  t.teardown(() => { worker.child.kill('SIGKILL'); });
  t.true(await eventually(() => receiver.arrivals.size >= 4, 10_000));

  // Action: SIGTERM while 4 deliveries wait for their answers.
  const inFlight = receiver.arrivals.size - receiver.acknowledged.size;
  const signalled = performance.now();
  worker.child.kill('SIGTERM');
  const code = await worker.exited;
  const exitMs = performance.now() - signalled;

  // Assertions: exit 0 in time, every request that arrived was answered and recorded, no job left locked.
  t.is(code, 0);
  t.true(exitMs < SHUTDOWN_TIMEOUT_MS, `exited ${Math.round(exitMs)} ms after SIGTERM`);
  const deliveredByFirst = receiver.acknowledged.size;
  t.is(await acked(), deliveredByFirst, 'every answered delivery is recorded as acknowledged');
  t.is(await locked(), 0, 'no job is left locked');
  const second = await startWorkerProcess(h.databaseUrl, WORKER_ENV);
  t.teardown(() => { second.child.kill('SIGKILL'); });
  t.true(await eventually(async () => (await acked()) === 30, 30_000), `${await acked()} of 30 acknowledged`);
  t.true([...receiver.arrivals.values()].every((n) => n === 1), 'each event arrived once');
  second.child.kill('SIGTERM');
  t.is(await second.exited, 0);
  const check = await runConsistencyCheck(h.databaseUrl);
  t.is(check.code, 0, check.output);
  t.log(`${inFlight} deliveries in flight at SIGTERM finished; exit 0 after ${Math.round(exitMs)} ms; ` +
    `the first worker delivered ${deliveredByFirst}, the next one ${30 - deliveredByFirst}`);
});

test.serial('worker: SIGTERM with deliveries hanging aborts them halfway through the timeout and hands them on at once', async (t) => {
  // Setup: a receiver that hangs until told otherwise; 12 events.
  let hang = true;
  const { receiver, acked, locked } = await deliveryBacklog(t, () => (hang ? 'hang' : { status: 200 }), 12);
  const worker = await startWorkerProcess(h.databaseUrl, WORKER_ENV);
  t.teardown(() => { worker.child.kill('SIGKILL'); });
  t.true(await eventually(() => receiver.arrivals.size >= 4, 10_000));

  // Action: SIGTERM while 4 deliveries hang; then the receiver recovers and a new worker starts.
  const signalled = performance.now();
  worker.child.kill('SIGTERM');
  const code = await worker.exited;
  const exitMs = performance.now() - signalled;
  t.is(code, 0);
  t.true(exitMs < SHUTDOWN_TIMEOUT_MS, `exited ${Math.round(exitMs)} ms after SIGTERM`);
  t.is(await locked(), 0, 'no job is left locked');
  const aborted = await h.db('webhook_deliveries').where({ error: 'aborted: the worker is shutting down' }).count({ n: '*' }).first();
  t.is(Number(aborted!.n), 4, 'each hanging delivery is logged as an aborted attempt');
  hang = false;
  const second = await startWorkerProcess(h.databaseUrl, WORKER_ENV);
  t.teardown(() => { second.child.kill('SIGKILL'); });
  const restarted = performance.now();

  // Assertions: everything delivered promptly (no heartbeat timeout, no retry delay), nothing acknowledged twice.
  t.true(await eventually(async () => (await acked()) === 12, 20_000), `${await acked()} of 12 acknowledged`);
  const deliveredMs = performance.now() - restarted;
  t.true(deliveredMs < 5000, `delivered in ${Math.round(deliveredMs)} ms after the new worker started`);
  t.true([...receiver.acknowledged.values()].every((n) => n === 1), 'no event acknowledged twice');
  second.child.kill('SIGTERM');
  t.is(await second.exited, 0);
  const check = await runConsistencyCheck(h.databaseUrl);
  t.is(check.code, 0, check.output);
  t.log(`4 hanging deliveries aborted; exit 0 after ${Math.round(exitMs)} ms; all 12 delivered ${Math.round(deliveredMs)} ms after the next worker started`);
});

// The webhook delivery scenario, shared by `npm run bench:webhooks` and `npm run bench`: events fanned out to 2
// subscriptions on a local receiver, delivered by a real worker process. Measures deliveries per second,
// commit-to-delivery latency (under the backlog and, one event at a time, on an idle queue) and whether any
// delivery was lost or doubled. Figures, not assertions.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createDb } from '../db/knex.ts';
import { migrateLatest } from '../db/migrations/index.ts';
import { createAccount } from '../db/accounts.ts';
import { recordEvents } from '../db/events.ts';
import { encrypt } from '../shared/encryption.ts';
import { generateSecret } from '../shared/webhook-secrets.ts';
import { createDatabase, dropDatabase } from '../test/helpers/database.ts';
import { peakRssMb, procfileArgs } from './processes.ts';

export interface WebhookBenchOptions {
  /** The PostgreSQL server's maintenance database: the scenario creates and drops a database of its own. */
  adminUrl: string;
  events: number;
  idleEvents: number;
  workerConcurrency?: string;
  log?: (line: string) => void;
}

export interface WebhookBenchResult {
  events: number;
  subscriptions: number;
  drained: boolean;
  deliveriesPerSecond: number;
  workerStartToFirstMs: number;
  backlogP50Ms: number;
  backlogP99Ms: number;
  idleP50Ms: number;
  idleP99Ms: number;
  lost: number;
  doubled: number;
  logRows: number;
  expectedLogRows: number;
  /** The worker process's peak resident set, from /proc (Linux), in MB. */
  workerPeakRssMb: number | null;
}

const BATCH = 500;

export const percentile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor((sorted.length * p) / 100))] ?? NaN;

export async function runWebhookBench(options: WebhookBenchOptions): Promise<WebhookBenchResult> {
  const log = options.log ?? (() => {});
  const { events: EVENTS, idleEvents: IDLE_EVENTS } = options;

  // The receiver: answers 200 at once and notes when each (event, subscription) arrived.
  const arrivals = new Map<string, number[]>();
  let delivered = 0;
  let onArrival: (() => void) | undefined;
  const receiver = http.createServer((request, response) => {
    const key = `${request.headers['webhook-id']} ${request.url}`;
    const at = performance.now();
    request.resume();
    request.on('end', () => {
      arrivals.set(key, [...(arrivals.get(key) ?? []), at]);
      delivered += 1;
      response.end('ok');
      onArrival?.();
    });
  });
  receiver.keepAliveTimeout = 60_000;
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

  const database = `stockroom_bench_webhooks_${process.pid}`;
  const url = await createDatabase(options.adminUrl, database);
  await migrateLatest(url);
  const db = createDb(url, 4);
  const key = randomBytes(32);
  const { accountId } = await createAccount(db, 'Bench', 'bench@example.com');
  const subscriptions = ['/a', '/b'];
  for (const path of subscriptions) {
    await db('webhooks').insert({ account_id: accountId, url: receiverUrl + path, events: ['*'], secret_encrypted: encrypt(key, generateSecret()) });
  }

  const committedAt = new Map<string, number>();
  async function emit(count: number): Promise<void> {
    const events = await db.transaction((trx) => recordEvents(trx, accountId, Array.from({ length: count }, (_, i) => ({
      type: 'stock.adjusted' as const, data: { n: i, note: 'bench' },
    }))));
    const now = performance.now();
    for (const event of events) committedAt.set(event.id, now);
  }

  async function waitForDeliveries(total: number, timeoutMs: number): Promise<boolean> {
    const deadline = Date.now() + timeoutMs;
    while (delivered < total) {
      if (Date.now() > deadline) return false;
      await new Promise<void>((resolve) => { onArrival = resolve; setTimeout(resolve, 50); });
    }
    return true;
  }

  function latencies(eventIds: Iterable<string>): number[] {
    const values: number[] = [];
    for (const id of eventIds) {
      for (const path of subscriptions) {
        const first = arrivals.get(`${id} ${path}`)?.[0];
        if (first !== undefined) values.push(first - committedAt.get(id)!);
      }
    }
    return values.sort((a, b) => a - b);
  }

  log(`Recording ${EVENTS} events (${EVENTS * subscriptions.length} deliveries) before the worker starts...`);
  for (let done = 0; done < EVENTS; done += BATCH) await emit(Math.min(BATCH, EVENTS - done));
  const backlogIds = [...committedAt.keys()];

  const worker = spawn(process.execPath, await procfileArgs('worker'), {
    env: {
      ...process.env, DATABASE_URL: url, ENCRYPTION_KEY: key.toString('hex'), ALLOW_INSECURE_WEBHOOK_URLS: 'true', LOG_LEVEL: 'warn',
      ...(options.workerConcurrency ? { WORKER_CONCURRENCY: options.workerConcurrency } : {}),
    },
    stdio: ['ignore', 'inherit', 'inherit'],
  });
  const started = performance.now();
  const drained = await waitForDeliveries(EVENTS * subscriptions.length, 300_000);
  const firstArrival = Math.min(...[...arrivals.values()].map((times) => times[0]!));
  const seconds = (performance.now() - firstArrival) / 1000;
  const backlog = latencies(backlogIds);

  // Idle queue: one event at a time, each waited for.
  const idleIds: string[] = [];
  for (let i = 0; i < IDLE_EVENTS; i += 1) {
    const before = delivered;
    await emit(1);
    idleIds.push([...committedAt.keys()].at(-1)!);
    await waitForDeliveries(before + subscriptions.length, 10_000);
  }
  const idle = latencies(idleIds);

  const expected = (EVENTS + IDLE_EVENTS) * subscriptions.length;
  const doubled = [...arrivals.values()].filter((times) => times.length > 1).length;
  const lost = expected - arrivals.size;
  // The log row is written just after the receiver answers: give the last ones a moment.
  let logRows = 0;
  for (let tries = 0; tries < 50 && logRows < expected; tries += 1) {
    logRows = Number((await db('webhook_deliveries').count({ n: '*' }).first())!.n);
    if (logRows < expected) await new Promise((resolve) => setTimeout(resolve, 100));
  }
  const workerPeakRssMb = await peakRssMb(worker.pid);

  worker.kill('SIGTERM');
  await once(worker, 'exit');
  await db.destroy();
  await dropDatabase(options.adminUrl, database);
  receiver.close();

  return {
    events: EVENTS,
    subscriptions: subscriptions.length,
    drained,
    deliveriesPerSecond: Math.round((EVENTS * subscriptions.length) / seconds),
    workerStartToFirstMs: firstArrival - started,
    backlogP50Ms: percentile(backlog, 50),
    backlogP99Ms: percentile(backlog, 99),
    idleP50Ms: percentile(idle, 50),
    idleP99Ms: percentile(idle, 99),
    lost,
    doubled,
    logRows,
    expectedLogRows: expected,
    workerPeakRssMb,
  };
}

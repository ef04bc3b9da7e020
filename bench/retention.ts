// The event-retention scenario, shared by `npm run bench:retention` and `npm run bench`: does a long event log cost
// anything? With 1,000 and then 1,000,000 events (each with one acknowledged dispatch and one delivery log row, as
// a subscribed account leaves them), it measures GET /events (first page, and the page after a recent event)
// through the web process, and the fan-out and delivery of 2,000 new events by the worker; then the tables' size
// per million events, and how long the daily prune takes to delete them all. Figures, not assertions.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import autocannon from 'autocannon';
import { createAccount, createApiKey } from '../db/accounts.ts';
import { recordEvents } from '../db/events.ts';
import { createDb } from '../db/knex.ts';
import { migrateLatest } from '../db/migrations/index.ts';
import { pruneEvents } from '../jobs/events__prune.ts';
import { API_PREFIX } from '../server/routes.ts';
import { encrypt } from '../shared/encryption.ts';
import { generateSecret } from '../shared/webhook-secrets.ts';
import { createDatabase, dropDatabase } from '../test/helpers/database.ts';
import { procfileArgs, startTarget, stopTarget } from './processes.ts';

export interface RetentionRun {
  events: number;
  /** GET /events?limit=100 (the oldest page) and ?after=<a recent event>&limit=100: req/s and p50 ms. */
  firstPage: { requestsPerSecond: number; p50Ms: number };
  afterRecent: { requestsPerSecond: number; p50Ms: number };
  /** 2,000 new events fanned out and delivered to one subscription by a fresh worker. */
  fanOutPerSecond: number;
  /** Bytes on disk (tables and indexes) per million events, for events, dispatches and the delivery log. */
  bytesPerMillion?: Record<string, number>;
  /** The prune of every seeded event (all older than 30 days). */
  prune?: { deleted: number; seconds: number };
}

const SECONDS = 5;
const NEW_EVENTS = 2000;

/** `count` events of the account, 40 days old, each delivered once to `webhookId`: as a month of traffic leaves them. */
async function seedEvents(db: ReturnType<typeof createDb>, accountId: string, webhookId: string, count: number): Promise<void> {
  const chunk = 100_000;
  for (let done = 0; done < count; done += chunk) {
    const n = Math.min(chunk, count - done);
    await db.raw(`with e as (
        insert into events (account_id, type, data, created_at)
        select :account, 'stock.adjusted', json_build_object('n', g, 'note', 'seeded'), now() - interval '40 days' + g * interval '1 ms'
        from generate_series(:from::int, :to::int) g
        returning id, created_at
      ), d as (
        insert into webhook_dispatches (webhook_id, event_id, account_id, attempts, acknowledged_at, created_at, updated_at)
        select :webhook, id, :account, 1, created_at, created_at, created_at from e
      )
      insert into webhook_deliveries (account_id, webhook_id, event_id, event_type, attempt, outcome, response_status, duration_ms, created_at, updated_at)
      select :account, :webhook, id, 'stock.adjusted', 1, 'succeeded', 200, 3, created_at, created_at from e`,
    { account: accountId, webhook: webhookId, from: done + 1, to: done + n });
  }
  await db.raw('vacuum analyze events, webhook_dispatches, webhook_deliveries');
}

async function load(base: string, apiKey: string, path: string) {
  const result = await autocannon({ url: base + API_PREFIX + path, connections: 20, duration: SECONDS, headers: { 'x-api-key': apiKey } });
  return { requestsPerSecond: Math.round(result.requests.average), p50Ms: result.latency.p50 };
}

async function runOnce(adminUrl: string, events: number, withPrune: boolean, log: (line: string) => void): Promise<RetentionRun> {
  let delivered = 0;
  let onArrival: (() => void) | undefined;
  const receiver = http.createServer((request, response) => {
    request.resume();
    request.on('end', () => { delivered += 1; response.end('ok'); onArrival?.(); });
  });
  receiver.listen(0, '127.0.0.1');
  await once(receiver, 'listening');
  const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hook`;

  const database = `stockroom_bench_retention_${process.pid}`;
  const url = await createDatabase(adminUrl, database);
  await migrateLatest(url);
  const db = createDb(url, 4);
  const encryptionKey = randomBytes(32);
  const { accountId } = await createAccount(db, 'Bench', 'bench@example.com');
  const { key } = await createApiKey(db, { accountId, email: 'bench@example.com', label: 'bench' });
  const [webhook] = await db('webhooks').insert({
    account_id: accountId, url: receiverUrl, events: ['*'], secret_encrypted: encrypt(encryptionKey, generateSecret()),
  }).returning('id');

  log(`  seeding ${events.toLocaleString('en')} events with their dispatch and delivery log rows...`);
  const seeding = performance.now();
  await seedEvents(db, accountId, webhook.id, events);
  log(`  seeded in ${((performance.now() - seeding) / 1000).toFixed(1)} s`);
  const recent = await db('events').where({ account_id: accountId }).orderBy('seq', 'desc').offset(100).first('id');

  const env = { DATABASE_URL: url, ENCRYPTION_KEY: encryptionKey.toString('hex'), RATE_LIMIT_PER_KEY: '100000000', LOG_LEVEL: 'warn' };
  const web = await startTarget('web', await procfileArgs('web'), env, '/health');
  const firstPage = await load(web.base, key, '/events?limit=100');
  const afterRecent = await load(web.base, key, `/events?after=${recent.id}&limit=100`);
  await stopTarget(web);

  await db.transaction((trx) => recordEvents(trx, accountId, Array.from({ length: NEW_EVENTS }, (_, n) => ({ type: 'stock.adjusted' as const, data: { n } }))));
  const worker = spawn(process.execPath, await procfileArgs('worker'), {
    env: { ...process.env, ...env, ALLOW_INSECURE_WEBHOOK_URLS: 'true' }, stdio: ['ignore', 'inherit', 'inherit'],
  });
  while (delivered === 0) await new Promise<void>((resolve) => { onArrival = resolve; setTimeout(resolve, 20); });
  const first = performance.now();
  const deadline = Date.now() + 120_000;
  while (delivered < NEW_EVENTS && Date.now() < deadline) await new Promise<void>((resolve) => { onArrival = resolve; setTimeout(resolve, 50); });
  const fanOutPerSecond = Math.round((delivered - 1) / ((performance.now() - first) / 1000));
  worker.kill('SIGTERM');
  await once(worker, 'exit');

  const run: RetentionRun = { events, firstPage, afterRecent, fanOutPerSecond };
  if (withPrune) {
    const sizes = await db.raw<{ rows: Array<{ name: string; bytes: string }> }>(`select t as name, pg_total_relation_size(t::regclass) as bytes
      from unnest(array['events', 'webhook_dispatches', 'webhook_deliveries']) t`);
    run.bytesPerMillion = Object.fromEntries(sizes.rows.map((row) => [row.name, Math.round((Number(row.bytes) / events) * 1_000_000)]));
    log('  pruning every event older than 30 days...');
    let deleted = 0;
    const pruning = performance.now();
    await pruneEvents(db, { days: 30 }).run({}, { logger: { info: (line: string) => { deleted = Number(/pruned (\d+)/.exec(line)?.[1] ?? 0); } } } as never);
    run.prune = { deleted, seconds: Math.round((performance.now() - pruning) / 100) / 10 };
  }
  await db.destroy();
  await dropDatabase(adminUrl, database);
  receiver.close();
  return run;
}

export async function runRetentionBench(options: { adminUrl: string; large?: number; log?: (line: string) => void }): Promise<RetentionRun[]> {
  const log = options.log ?? (() => {});
  const runs: RetentionRun[] = [];
  for (const events of [1000, options.large ?? 1_000_000]) {
    log(`Event log of ${events.toLocaleString('en')} events:`);
    runs.push(await runOnce(options.adminUrl, events, events > 1000, log));
  }
  return runs;
}

export function describeRetention(runs: RetentionRun[]): string[] {
  const [small, large] = runs as [RetentionRun, RetentionRun];
  const mb = (bytes: number) => `${Math.round(bytes / 2 ** 20)} MB`;
  const lines = runs.map((run) => `event log of ${run.events.toLocaleString('en')}: GET /events?limit=100 ${run.firstPage.requestsPerSecond} req/s `
    + `(p50 ${run.firstPage.p50Ms} ms), ?after=<recent> ${run.afterRecent.requestsPerSecond} req/s (p50 ${run.afterRecent.p50Ms} ms), `
    + `fan-out and delivery of ${NEW_EVENTS} new events ${run.fanOutPerSecond}/s`);
  lines.push(`${large.events.toLocaleString('en')} events against ${small.events.toLocaleString('en')}: GET /events ${(large.firstPage.requestsPerSecond / small.firstPage.requestsPerSecond).toFixed(2)}x, `
    + `after a recent event ${(large.afterRecent.requestsPerSecond / small.afterRecent.requestsPerSecond).toFixed(2)}x, `
    + `fan-out ${(large.fanOutPerSecond / small.fanOutPerSecond).toFixed(2)}x`);
  if (large.bytesPerMillion && large.prune) {
    lines.push(`per million events (one subscription): ${Object.entries(large.bytesPerMillion).map(([table, bytes]) => `${table} ${mb(bytes)}`).join(', ')}; `
      + `the prune deleted ${large.prune.deleted.toLocaleString('en')} in ${large.prune.seconds} s`);
  }
  return lines;
}

// `npm run bench:retention`
if (import.meta.main) {
  const { startScratchServer } = await import('../test/helpers/database.ts');
  const server = await startScratchServer('bench');
  const large = Number(process.argv[2] ?? 1_000_000);
  const runs = await runRetentionBench({ adminUrl: server.adminUrl, large, log: (line) => process.stdout.write(`${line}\n`) });
  await server.stop();
  process.stdout.write(`\n${describeRetention(runs).map((line) => `- ${line}`).join('\n')}\n`);
}

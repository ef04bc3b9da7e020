// `npm run bench`: the API under load against a raw Koa + pg baseline doing the same SQL, in the same run on the
// same PostgreSQL (throw-away: embedded, or DATABASE_URL's server). Seeds realistic data, starts the real web
// process, runs each scenario with autocannon, then the webhook delivery scenario with a real worker, then the
// event-retention one (bench/retention.ts). Prints one table and writes it to bench/results/latest.json.
// Figures, not assertions: the machine is shared and noisy, so read the ratios. Options: --duration seconds per scenario (10),
// --connections (50), --events (10000), --only <text> (only the scenarios whose name holds it, without the other
// sections: for working on one figure).
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createApiKey } from '../db/accounts.ts';
import { createDb } from '../db/knex.ts';
import { migrateLatest } from '../db/migrations/index.ts';
import { API_PREFIX } from '../server/routes.ts';
import { createDatabase, dropDatabase, startScratchServer } from '../test/helpers/database.ts';
import { seed, SEED_SIZES } from './seed.ts';
import { currentRssMb, peakRssMb, procfileArgs, startTarget, stopTarget, type Target } from './processes.ts';
import { runBatchBench } from './batches.ts';
import { runPgbench } from './pgbench.ts';
import { describeRetention, runRetentionBench } from './retention.ts';
import { runWebhookBench } from './webhook-delivery.ts';

const { values } = parseArgs({ options: {
  duration: { type: 'string', default: '10' },
  connections: { type: 'string', default: '50' },
  events: { type: 'string', default: '10000' },
  only: { type: 'string' },
} });
const DURATION = Number(values.duration);
const CONNECTIONS = Number(values.connections);
const log = (line: string) => process.stdout.write(`${line}\n`);
const started = Date.now();

interface Request {
  method: 'GET' | 'POST';
  path: string;
  body?: unknown;
  /** Another key than the seeded one. */
  apiKey?: string;
}

interface Measured {
  requestsPerSecond: number;
  p50Ms: number;
  p99Ms: number;
  non2xx: number;
  status5xx: number;
  errors: number;
  peakRssMb: number;
}

/** One autocannon run; `next` makes each request (a random item, the next order...). */
async function load(target: Target, apiKey: string, next: () => Request, seconds: number): Promise<Measured> {
  let peak = (await currentRssMb(target.child.pid)) ?? 0;
  const sampler = setInterval(() => {
    void currentRssMb(target.child.pid).then((rss) => { peak = Math.max(peak, rss ?? 0); });
  }, 100);
  const result = await autocannon({
    url: target.base,
    connections: CONNECTIONS,
    duration: seconds,
    headers: { 'x-api-key': apiKey, 'content-type': 'application/json' },
    requests: [{
      setupRequest: (request) => {
        const { method, path, body, apiKey: key } = next();
        const headers = key ? { ...request.headers, 'x-api-key': key } : request.headers;
        return { ...request, method, path: API_PREFIX + path, headers, body: body === undefined ? undefined : JSON.stringify(body) };
      },
    }],
  });
  clearInterval(sampler);
  return {
    requestsPerSecond: Math.round(result.requests.average),
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    non2xx: result.non2xx,
    status5xx: result['5xx'],
    errors: result.errors + result.timeouts,
    peakRssMb: Math.round(peak),
  };
}

const pick = <T>(list: T[]): T => list[Math.floor(Math.random() * list.length)]!;

// --- The database and its data -------------------------------------------------------------------------------
const server = await startScratchServer('bench');
const database = `stockroom_bench_${process.pid}`;
const url = await createDatabase(server.adminUrl, database);
await migrateLatest(url);
const db = createDb(url, 4);
const secretKey = randomBytes(32);

// The subscriptions' receiver: the API scenarios run without a worker, so it only answers the odd request.
const receiver = http.createServer((request, response) => { request.resume(); request.on('end', () => response.end('ok')); });
receiver.listen(0, '127.0.0.1');
await once(receiver, 'listening');
const receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;

log(`Seeding ${SEED_SIZES.items} items, ${SEED_SIZES.locations} locations, ${SEED_SIZES.movements} movements, ${SEED_SIZES.salesOrders} sales orders...`);
const seeded = await seed(db, SEED_SIZES, [`${receiverUrl}/a`, `${receiverUrl}/b`], secretKey);
log(`Seeded in ${((Date.now() - started) / 1000).toFixed(0)} s`);

const poolMax = process.env.DB_POOL_MAX ?? '10';
const webArgs = await procfileArgs('web');
const ours = await startTarget('stockroom', webArgs, {
  DATABASE_URL: url, ENCRYPTION_KEY: secretKey.toString('hex'), ALLOW_INSECURE_WEBHOOK_URLS: 'true',
  LOG_LEVEL: 'warn', RATE_LIMIT_PER_KEY: '1000000000', RATE_LIMIT_PER_IP: '1000000000', DB_POOL_MAX: poolMax,
}, '/health');
const raw = await startTarget('raw', ['bench/raw-server.ts'], { DATABASE_URL: url, DB_POOL_MAX: poolMax }, '/');
const idleRssMb = { ours: await currentRssMb(ours.child.pid), raw: await currentRssMb(raw.child.pid) };

log(`pgbench TPC-B (${CONNECTIONS} clients, scale 10, ${DURATION} s), the ceiling...`);
const pgbench = await runPgbench(server.adminUrl, { clients: CONNECTIONS, seconds: DURATION });

// --- The scenarios -------------------------------------------------------------------------------------------
const adjustable = seeded.itemIds.slice(0, 1000);
const hot = { itemId: seeded.itemIds[0]!, locationId: seeded.locationIds[0]! };
let nextOrder = 0;
// Items with stock to spare at one location: orders take their lines from them, reserving there or not.
const shop = seeded.locationIds[1]!;
const stocked = (await db('stock_levels').where({ account_id: seeded.accountId, location_id: shop }).where('quantity', '>=', 10)
  .pluck('item_id')) as string[];
const salesOrder = (locationId?: string): Request => ({
  method: 'POST', path: '/sales-orders',
  body: { customerId: pick(seeded.customerIds), locationId, lineItems: Array.from({ length: 5 }, () => ({ itemId: pick(stocked), quantity: 1 })) },
});

interface Scenario {
  name: string;
  request: () => Request;
  /** Whether the raw server does the same work (the other scenarios have no baseline). */
  baseline: boolean;
}

let nextSku = 0;
const adjustment = (itemId: string, locationId: string): Request => ({
  method: 'POST', path: '/stock-adjustments', body: { itemId, locationId, quantity: 1 + Math.floor(Math.random() * 5), reason: 'bench' },
});

const scenarios: Scenario[] = [
  { name: 'GET /items?limit=100', baseline: true, request: () => ({ method: 'GET', path: '/items?limit=100' }) },
  { name: 'GET /items/{id}', baseline: true, request: () => ({ method: 'GET', path: `/items/${pick(seeded.itemIds)}` }) },
  { name: 'GET /items?page=1000&limit=100', baseline: true, request: () => ({ method: 'GET', path: '/items?page=1000&limit=100' }) },
  { name: 'GET /stock-levels?itemId=', baseline: true, request: () => ({ method: 'GET', path: `/stock-levels?itemId=${pick(seeded.itemIds)}` }) },
  {
    name: 'POST /items (one row)', baseline: false,
    request: () => ({ method: 'POST', path: '/items', body: { sku: `ONE-${process.pid}-${nextSku++}`, name: 'One at a time', price: 1.5 } }),
  },
  { name: 'POST /stock-adjustments (random of 1,000 items)', baseline: true, request: () => adjustment(pick(adjustable), pick(seeded.locationIds)) },
  { name: 'POST /stock-adjustments (one hot item)', baseline: true, request: () => adjustment(hot.itemId, hot.locationId) },
  { name: 'POST /sales-orders (5 lines)', baseline: false, request: () => salesOrder() },
  { name: 'POST /sales-orders (5 lines, reserving)', baseline: false, request: () => salesOrder(shop) },
  {
    name: 'POST /purchase-orders/{id}/close (10 lines)', baseline: false,
    request: () => ({ method: 'POST', path: `/purchase-orders/${seeded.purchaseOrderIds[nextOrder++ % seeded.purchaseOrderIds.length]}/close` }),
  },
];

interface Row extends Measured {
  scenario: string;
  baseline: Measured | null;
  ratio: number | null;
}
const rows: Row[] = [];
for (const scenario of scenarios.filter((entry) => !values.only || entry.name.includes(values.only))) {
  log(`${scenario.name}...`);
  const targets = scenario.baseline ? [raw, ours] : [ours];
  // A short warm-up each: JIT, pool connections and PostgreSQL's caches.
  for (const target of targets) await load(target, seeded.apiKey, scenario.request, 2);
  const baseline = scenario.baseline ? await load(raw, seeded.apiKey, scenario.request, DURATION) : null;
  const measured = await load(ours, seeded.apiKey, scenario.request, DURATION);
  rows.push({
    scenario: scenario.name, ...measured, baseline,
    ratio: baseline ? Number((measured.requestsPerSecond / baseline.requestsPerSecond).toFixed(2)) : null,
  });
}

// Peak RSS (VmHWM) of both over the scenarios both served, before the sections only ours runs.
const shownRssMb = { ours: await peakRssMb(ours.child.pid), raw: await peakRssMb(raw.child.pid) };
const fmt = (value: number | null | undefined, digits = 0) => (value === null || value === undefined ? '-' : value.toFixed(digits));
const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'non-2xx', 'peak RSS MB', 'raw req/s', 'raw p50 ms', 'ratio', 'x pgbench'];
const tableOf = (measured: Row[]) => [
  `| ${header.join(' | ')} |`,
  `|${header.map((_, i) => (i === 0 ? '---' : '---:')).join('|')}|`,
  ...measured.map((row) => [
    row.scenario, fmt(row.requestsPerSecond), fmt(row.p50Ms), fmt(row.p99Ms), `${row.non2xx}${row.status5xx ? ` (${row.status5xx} 5xx)` : ''}`,
    fmt(row.peakRssMb), fmt(row.baseline?.requestsPerSecond), fmt(row.baseline?.p50Ms), fmt(row.ratio, 2),
    row.scenario.startsWith('POST') && pgbench ? fmt(row.requestsPerSecond / pgbench.tps, 2) : '-',
  ]).map((cells) => `| ${cells.join(' | ')} |`),
].join('\n');
const pgbenchLine = pgbench
  ? `pgbench TPC-B (${pgbench.version}, ${pgbench.clients} clients, scale ${pgbench.scale}, ${pgbench.seconds} s) on the same server: ${pgbench.tps} tps`
  : 'pgbench: not installed, no ceiling measured';
const memoryLine = `web process RSS: idle ${idleRssMb.ours ?? 'n/a'} MB, peak ${shownRssMb.ours ?? 'n/a'} MB over the scenarios above; `
  + `the raw stack's idle ${idleRssMb.raw ?? 'n/a'} MB, peak ${shownRssMb.raw ?? 'n/a'} MB over the same load`;
if (values.only) {
  log(`\n${tableOf(rows)}\n\n- ${pgbenchLine}\n- ${memoryLine}`);
  await Promise.all([stopTarget(ours), stopTarget(raw)]);
  await db.destroy();
  await dropDatabase(server.adminUrl, database);
  await server.stop();
  process.exit(0);
}

// The same reads on two fresh web processes, one counting keys in PostgreSQL, one in its own memory
// (RATE_LIMIT_STORE=memory), as before the limits were shared: what counting in PostgreSQL costs. Fresh both: a
// process that served every scenario before runs slower than a new one, whatever it counts.
const freshTarget = (name: string, store: string) => startTarget(name, webArgs, {
  DATABASE_URL: url, ENCRYPTION_KEY: secretKey.toString('hex'), ALLOW_INSECURE_WEBHOOK_URLS: 'true', RATE_LIMIT_STORE: store,
  LOG_LEVEL: 'warn', RATE_LIMIT_PER_KEY: '1000000000', RATE_LIMIT_PER_IP: '1000000000', DB_POOL_MAX: poolMax,
}, '/health');
const memoryTarget = await freshTarget('stockroom-memory-limits', 'memory');
const sharedTarget = await freshTarget('stockroom-shared-limits', 'postgres');
// One key counted on every request is the worst case (every request updates the one row of that key, under its
// lock); many keys are what a deployment sees. Both, each measured in turn.
const keys = await Promise.all(Array.from({ length: 50 }, async (_, i) =>
  (await createApiKey(db, { accountId: seeded.accountId, email: 'bench@example.com', label: `bench ${i}` })).key));
let nextKey = 0;
const limitComparison: Array<{ scenario: string; keys: number; shared: number; memory: number }> = [];
await stopTarget(raw);
for (const name of ['GET /items?limit=100', 'GET /items/{id}']) {
  const scenario = scenarios.find((entry) => entry.name === name)!;
  for (const keyCount of [1, keys.length]) {
    const request = keyCount === 1 ? scenario.request : () => ({ ...scenario.request(), apiKey: keys[nextKey++ % keys.length] });
    log(`${name}, ${keyCount} key(s): counted in memory and in PostgreSQL, in turn (ABBA)...`);
    for (const target of [memoryTarget, sharedTarget]) await load(target, seeded.apiKey, request, 2);
    const rates = { memory: 0, shared: 0 };
    for (const [side, target] of [['memory', memoryTarget], ['shared', sharedTarget], ['shared', sharedTarget], ['memory', memoryTarget]] as const) {
      rates[side] += (await load(target, seeded.apiKey, request, DURATION)).requestsPerSecond / 2;
    }
    limitComparison.push({ scenario: name, keys: keyCount, shared: Math.round(rates.shared), memory: Math.round(rates.memory) });
  }
}
await stopTarget(memoryTarget);
await stopTarget(sharedTarget);

log('Bulk writes (items upserted 1,000 at a time, adjustments of 1,000 rows, counts of 1,000 lines)...');
const batches = await runBatchBench(ours.base, seeded.apiKey, { items: 100_000, itemIds: adjustable, locationIds: seeded.locationIds });

// The hot row serialised: its level is the sum of its movements.
const hotCheck = await db.raw(`select l.quantity as level, (select sum(quantity) from stock_movements m
    where m.account_id = l.account_id and m.item_id = l.item_id and m.location_id = l.location_id) as movements
  from stock_levels l where account_id = ? and item_id = ? and location_id = ?`, [seeded.accountId, hot.itemId, hot.locationId]);
const hotRow = hotCheck.rows[0] as { level: number; movements: number };
const webPeakRssMb = await peakRssMb(ours.child.pid);
await stopTarget(ours);
await db.destroy();
await dropDatabase(server.adminUrl, database);
receiver.close();

log(`Webhook delivery (${values.events} events x 2 subscriptions, a real worker)...`);
const webhooks = await runWebhookBench({ adminUrl: server.adminUrl, events: Number(values.events), idleEvents: 200 });
log('Event retention (GET /events and the fan-out with 1,000 and 1,000,000 events, then the prune)...');
const retention = await runRetentionBench({ adminUrl: server.adminUrl, log });
await server.stop();

// --- The table -----------------------------------------------------------------------------------------------
const pageOne = rows.find((row) => row.scenario === 'GET /items?limit=100')!;
const deep = rows.find((row) => row.scenario === 'GET /items?page=1000&limit=100')!;
const markdown = tableOf(rows);
const plainOrders = rows.find((row) => row.scenario === 'POST /sales-orders (5 lines)')!;
const reservingOrders = rows.find((row) => row.scenario === 'POST /sales-orders (5 lines, reserving)')!;
const singleItems = rows.find((row) => row.scenario === 'POST /items (one row)')!;
const notes = [
  pgbenchLine,
  memoryLine,
  ...limitComparison.map(({ scenario, keys: keyCount, shared, memory }) =>
    `${scenario}, ${keyCount === 1 ? 'one key' : `${keyCount} keys in turn`}, counted in PostgreSQL: ${shared} req/s, `
      + `${(shared / memory).toFixed(2)}x the ${memory} req/s counted in memory (RATE_LIMIT_STORE=memory; each the mean of two runs, in turn)`),
  `bulk: items upserted in batches of 1,000 (100,000, one client): ${batches.itemInsertsPerSecond} rows/s as inserts, `
    + `${batches.itemUpdatesPerSecond} rows/s as updates (${(batches.itemInsertsPerSecond / singleItems.requestsPerSecond).toFixed(0)}x the single-row create); `
    + `adjustments ${batches.adjustmentRowsPerSecond} rows/s in batches of 1,000; a count of 1,000 lines ${batches.countMsP50} ms (p50, max ${batches.countMsMax}); `
    + `${batches.failures} failed`,
  `sales orders reserving their lines run at ${(reservingOrders.requestsPerSecond / plainOrders.requestsPerSecond).toFixed(2)}x the rate of those that do not`,
  `page 1000 costs ${(pageOne.p50Ms ? deep.p50Ms / pageOne.p50Ms : NaN).toFixed(2)}x page 1 (p50), ${(pageOne.requestsPerSecond / deep.requestsPerSecond).toFixed(2)}x (req/s)`,
  `hot row: level ${hotRow.level}, sum of its movements ${hotRow.movements} (${Number(hotRow.level) === Number(hotRow.movements) ? 'equal' : 'DIFFERENT'})`,
  `web process peak RSS (VmHWM) over every scenario and the bulk writes: ${webPeakRssMb ?? 'n/a'} MB`,
  `webhooks: ${webhooks.deliveriesPerSecond} deliveries/s (${webhooks.events} events x ${webhooks.subscriptions}), `
    + `idle commit-to-delivery p50 ${webhooks.idleP50Ms.toFixed(1)} ms / p99 ${webhooks.idleP99Ms.toFixed(1)} ms, `
    + `under backlog p50 ${webhooks.backlogP50Ms.toFixed(0)} ms / p99 ${webhooks.backlogP99Ms.toFixed(0)} ms, `
    + `lost ${webhooks.lost}, doubled ${webhooks.doubled}, worker peak RSS ${webhooks.workerPeakRssMb ?? 'n/a'} MB`,
  ...describeRetention(retention),
];
const machine = `${os.cpus().length} x ${os.cpus()[0]?.model.trim()}, ${Math.round(os.totalmem() / 2 ** 30)} GB, Node ${process.version}, `
  + `${server.embedded ? 'embedded PostgreSQL' : 'DATABASE_URL'}, autocannon -c ${CONNECTIONS} -d ${DURATION}, DB_POOL_MAX ${poolMax}`;

log(`\n${machine}\n\n${markdown}\n\n${notes.map((note) => `- ${note}`).join('\n')}`);
await mkdir(new URL('./results/', import.meta.url), { recursive: true });
await writeFile(new URL('./results/latest.json', import.meta.url), `${JSON.stringify({
  date: new Date().toISOString(), machine, connections: CONNECTIONS, durationSeconds: DURATION, seed: SEED_SIZES,
  scenarios: rows, pgbench, idleRssMb, shownRssMb, hotRow, webPeakRssMb, limitComparison, batches, webhooks, retention, markdown, notes,
}, null, 2)}\n`);
log(`\nWritten to bench/results/latest.json (${((Date.now() - started) / 1000).toFixed(0)} s in all)`);
process.exit(0);

// `npm run bench:hostile`: hostile traffic against a real web process, in two parts.
//
// 1. Another tenant's latency while hostile bodies arrive: one account reads `GET /items` without pause while
//    another posts 1 MB bodies built to be expensive (500,000 array entries, 50,000 unknown fields, 1,000 lines of
//    wrong types) at 10 a second (BENCH_HOSTILE_PER_S). The reader's p50 and p99 are printed beside the same
//    reader alone.
// 2. An address flood: 200,000 requests (BENCH_REQUESTS) with invalid keys, each from another client IP
//    (TRUST_PROXY=true and X-Forwarded-For), and the web process's RSS sampled every second from /proc: memory
//    must level off (the limiter's store is bounded), not grow with the number of clients.
//
// Uses DATABASE_URL's server when set, or a throw-away embedded PostgreSQL.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { createAccount, createApiKey } from '../db/accounts.ts';
import { createDb } from '../db/knex.ts';
import { migrateLatest } from '../db/migrations/index.ts';
import { createDatabase, dropDatabase, freePort, startScratchServer } from '../test/helpers/database.ts';
import { procfileArgs } from './processes.ts';

const TOTAL = Number(process.env.BENCH_REQUESTS ?? 200_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);
const PHASE_S = Number(process.env.BENCH_SECONDS ?? 10);
const HOSTILE_PER_S = Number(process.env.BENCH_HOSTILE_PER_S ?? 10);

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024);
}

/** The n-th client's address: 200,000 distinct ones from 10.0.0.0/8. */
const clientIp = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

const say = (line: string) => process.stdout.write(`${line}\n`);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

const pg = await startScratchServer('bench');
const database = `stockroom_bench_${process.pid}`;
const databaseUrl = await createDatabase(pg.adminUrl, database);
await migrateLatest(databaseUrl);
const db = createDb(databaseUrl, 2);
const keyFor = async (name: string) => {
  const { accountId } = await createAccount(db, name, `${name}@example.com`);
  return (await createApiKey(db, { accountId, email: `${name}@example.com` })).key;
};
const readerKey = await keyFor('reader');
const hostileKey = await keyFor('hostile');
await db.destroy();

const port = await freePort();
const web = spawn(process.execPath, await procfileArgs('web'), {
  env: {
    ...process.env, DATABASE_URL: databaseUrl, ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    PORT: String(port), HOST: '127.0.0.1', TRUST_PROXY: 'true', LOG_LEVEL: 'warn', RATE_LIMIT_PER_KEY: '100000000',
  },
  stdio: ['ignore', 'inherit', 'inherit'],
});

interface Call {
  method?: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
const call = ({ method = 'GET', path, headers, body }: Call) => new Promise<number>((resolve, reject) => {
  const req = request({ host: '127.0.0.1', port, agent, method, path, headers }, (res) => {
    res.resume();
    res.on('end', () => resolve(res.statusCode ?? 0));
  });
  req.on('error', reject);
  req.end(body);
});

const percentile = (sorted: number[], q: number) => sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? 0;

/** The reader's latencies over `seconds`, one request at a time, while `alongside` runs. */
async function readFor(seconds: number): Promise<number[]> {
  const latencies: number[] = [];
  const until = performance.now() + seconds * 1000;
  while (performance.now() < until) {
    const started = performance.now();
    await call({ path: '/rest/api/v2/items?limit=50', headers: { 'X-API-Key': readerKey } });
    latencies.push(performance.now() - started);
  }
  return latencies.sort((a, b) => a - b);
}

/** Bodies just under the 1 MB limit, each expensive in its own way if validated entry by entry. */
const HOSTILE_BODIES = [
  `{"customerId":"x","lineItems":[${Array(500_000).fill('0').join(',')}]}`,
  JSON.stringify(Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`field${i}`, i]))),
  JSON.stringify({ customerId: 'x', lineItems: Array.from({ length: 1000 }, () => ({ itemId: 7, quantity: 'many', note: 'x'.repeat(800) })) }),
];

async function tenantIsolation(): Promise<void> {
  say(`Another tenant's GET /items?limit=50, one at a time for ${PHASE_S} s: alone, then while 1 MB hostile bodies arrive at ${HOSTILE_PER_S}/s`);
  const alone = await readFor(PHASE_S);
  const hostileStatuses = new Map<number, number>();
  let stop = false;
  const inFlight: Array<Promise<void>> = [];
  const sender = (async () => {
    for (let n = 0; !stop; n++) {
      const body = HOSTILE_BODIES[n % HOSTILE_BODIES.length]!;
      inFlight.push(call({
        method: 'POST', path: '/rest/api/v2/sales-orders', body,
        headers: { 'X-API-Key': hostileKey, 'Content-Type': 'application/json', 'Content-Length': String(Buffer.byteLength(body)) },
      }).then((status) => { hostileStatuses.set(status, (hostileStatuses.get(status) ?? 0) + 1); }));
      await sleep(1000 / HOSTILE_PER_S);
    }
  })();
  const started = performance.now();
  const rssBefore = rssMb(web.pid!);
  const besieged = await readFor(PHASE_S);
  stop = true;
  await sender;
  await Promise.all(inFlight);
  const rssAfter = rssMb(web.pid!);
  const elapsed = (performance.now() - started) / 1000;

  say('');
  say('| reader | requests | p50 ms | p99 ms | max ms |');
  say('|---|---:|---:|---:|---:|');
  for (const [name, latencies] of [['alone', alone], ['with hostile bodies', besieged]] as const) {
    say(`| ${name} | ${latencies.length} | ${percentile(latencies, 0.5).toFixed(1)} | ${percentile(latencies, 0.99).toFixed(1)} | ${latencies.at(-1)!.toFixed(1)} |`);
  }
  const hostileCount = [...hostileStatuses.values()].reduce((a, b) => a + b, 0);
  say(`hostile bodies: ${hostileCount} in ${elapsed.toFixed(1)} s, statuses ${JSON.stringify(Object.fromEntries(hostileStatuses))}; web RSS ${rssBefore} MB before, ${rssAfter} MB after`);
  say('');
}

async function addressFlood(): Promise<void> {
  const statuses = new Map<number, number>();
  const samples: Array<{ seconds: number; done: number; rss: number }> = [];
  let done = 0;
  let next = 0;
  const started = performance.now();
  const sample = () => samples.push({ seconds: Math.round((performance.now() - started) / 1000), done, rss: rssMb(web.pid!) });
  sample();
  const sampler = setInterval(sample, 1000);
  say(`${TOTAL} requests with invalid keys from ${TOTAL} client IPs, ${CONCURRENCY} at a time`);
  say('seconds  requests  web RSS (MB)');
  const printer = setInterval(() => {
    const last = samples.at(-1)!;
    say(`${String(last.seconds).padStart(7)}  ${String(last.done).padStart(8)}  ${String(last.rss).padStart(12)}`);
  }, 5000);
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < TOTAL) {
      const n = next++;
      const status = await call({ path: '/rest/api/v2/items', headers: { 'X-API-Key': `srk_invalid_${n}`, 'X-Forwarded-For': clientIp(n) } });
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      done++;
    }
  }));
  clearInterval(sampler);
  clearInterval(printer);
  sample();

  const seconds = (performance.now() - started) / 1000;
  const rss = samples.map((entry) => entry.rss);
  const quarter = (q: number) => samples[Math.min(samples.length - 1, Math.floor((samples.length - 1) * q))]!;
  say(`\n${TOTAL} requests in ${seconds.toFixed(1)} s (${Math.round(TOTAL / seconds)}/s); statuses ${JSON.stringify(Object.fromEntries(statuses))}`);
  say(`web RSS: start ${rss[0]} MB, at 25% ${quarter(0.25).rss} MB, 50% ${quarter(0.5).rss} MB, 75% ${quarter(0.75).rss} MB, `
    + `end ${rss.at(-1)} MB, peak ${rss.reduce((a, b) => Math.max(a, b))} MB`);
}

try {
  for (let attempt = 0; ; attempt++) {
    try {
      await call({ path: '/health', headers: {} });
      break;
    } catch (error) {
      if (attempt > 100) throw error;
      await sleep(100);
    }
  }
  await tenantIsolation();
  await addressFlood();
} finally {
  agent.destroy();
  web.kill('SIGTERM');
  await once(web, 'exit');
  await dropDatabase(pg.adminUrl, database).catch(() => {});
  await pg.stop();
}

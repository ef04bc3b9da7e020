// `npm run bench:hostile`: hostile traffic against a real web process. 200,000 requests (BENCH_REQUESTS) with
// invalid keys, each from another client IP (TRUST_PROXY=true and X-Forwarded-For), and the web process's RSS
// sampled every second from /proc. Every IP gets a rate-limit window and every key a database lookup: memory
// must level off (the limiter's store is bounded), not grow with the number of clients.
//
// Uses DATABASE_URL's server when set, or a throw-away embedded PostgreSQL.
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { migrateLatest } from '../db/migrations/index.ts';
import { createDatabase, dropDatabase, freePort, startScratchServer } from '../test/helpers/database.ts';

const TOTAL = Number(process.env.BENCH_REQUESTS ?? 200_000);
const CONCURRENCY = Number(process.env.BENCH_CONCURRENCY ?? 64);

function rssMb(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  return Math.round(Number(/VmRSS:\s+(\d+)/.exec(status)![1]) / 1024);
}

/** The n-th client's address: 200,000 distinct ones from 10.0.0.0/8. */
const clientIp = (n: number) => `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;

const pg = await startScratchServer('bench');
const database = `stockroom_bench_${process.pid}`;
const databaseUrl = await createDatabase(pg.adminUrl, database);
await migrateLatest(databaseUrl);
const port = await freePort();
const web = spawn(process.execPath, ['server/main.ts'], {
  env: {
    ...process.env, DATABASE_URL: databaseUrl, ENCRYPTION_KEY: randomBytes(32).toString('hex'),
    PORT: String(port), HOST: '127.0.0.1', TRUST_PROXY: 'true', LOG_LEVEL: 'warn',
  },
  stdio: ['ignore', 'inherit', 'inherit'],
});

try {
  const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const get = (n: number) => new Promise<number>((resolve, reject) => {
    const req = request({
      host: '127.0.0.1', port, agent, path: '/rest/api/v2/items',
      headers: { 'X-API-Key': `srk_invalid_${n}`, 'X-Forwarded-For': clientIp(n) },
    }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end();
  });
  for (let attempt = 0; ; attempt++) {
    try {
      await get(-1);
      break;
    } catch (error) {
      if (attempt > 100) throw error;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  const statuses = new Map<number, number>();
  const samples: Array<{ seconds: number; done: number; rss: number }> = [];
  let done = 0;
  let next = 0;
  const started = performance.now();
  const sample = () => samples.push({ seconds: Math.round((performance.now() - started) / 1000), done, rss: rssMb(web.pid!) });
  sample();
  const sampler = setInterval(sample, 1000);
  process.stdout.write(`${TOTAL} requests with invalid keys from ${TOTAL} client IPs, ${CONCURRENCY} at a time\n`);
  process.stdout.write('seconds  requests  web RSS (MB)\n');
  const printer = setInterval(() => {
    const last = samples.at(-1)!;
    process.stdout.write(`${String(last.seconds).padStart(7)}  ${String(last.done).padStart(8)}  ${String(last.rss).padStart(12)}\n`);
  }, 5000);
  await Promise.all(Array.from({ length: CONCURRENCY }, async () => {
    while (next < TOTAL) {
      const status = await get(next++);
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
  process.stdout.write(`\n${TOTAL} requests in ${seconds.toFixed(1)} s (${Math.round(TOTAL / seconds)}/s); statuses ${JSON.stringify(Object.fromEntries(statuses))}\n`);
  process.stdout.write(`web RSS: start ${rss[0]} MB, at 25% ${quarter(0.25).rss} MB, 50% ${quarter(0.5).rss} MB, 75% ${quarter(0.75).rss} MB, `
    + `end ${rss.at(-1)} MB, peak ${Math.max(...rss)} MB\n`);
  agent.destroy();
} finally {
  web.kill('SIGTERM');
  await once(web, 'exit');
  await dropDatabase(pg.adminUrl, database).catch(() => {});
  await pg.stop();
}

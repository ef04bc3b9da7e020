// `npm run bench:memory`: what V8's heap flags do to the web process's memory and speed. For each set of flags
// (`--flags="..."`, repeatable; the Procfile's by default, and Node's own with `--flags=`), starts the web
// process with them, loads it with `GET /items?limit=100`, then `POST /stock-adjustments`, 50 connections for 8 s
// each, and prints its idle and peak RSS (VmHWM) with the requests per second. Figures, not assertions.
//
// Uses DATABASE_URL's server when set, or a throw-away embedded PostgreSQL.
import { randomBytes } from 'node:crypto';
import { parseArgs } from 'node:util';
import autocannon from 'autocannon';
import { createDb } from '../db/knex.ts';
import { migrateLatest } from '../db/migrations/index.ts';
import { API_PREFIX } from '../server/routes.ts';
import { createDatabase, dropDatabase, startScratchServer } from '../test/helpers/database.ts';
import { seed } from './seed.ts';
import { currentRssMb, peakRssMb, procfileArgs, startTarget, stopTarget } from './processes.ts';

const procfileFlags = (await procfileArgs('web')).slice(0, -1).join(' ');
const { values } = parseArgs({ options: { flags: { type: 'string', multiple: true, default: [procfileFlags, ''] } } });

const server = await startScratchServer('bench');
const database = `stockroom_bench_memory_${process.pid}`;
const url = await createDatabase(server.adminUrl, database);
await migrateLatest(url);
const db = createDb(url, 4);
const secretKey = randomBytes(32);
process.stdout.write('Seeding 20,000 items and 50 locations...\n');
const seeded = await seed(db, { items: 20_000, locations: 50, movements: 50_000, customers: 10, salesOrders: 10, purchaseOrders: 10 }, [], secretKey);
const pick = <T>(list: T[]): T => list[Math.floor(Math.random() * list.length)]!;

const rows: string[][] = [];
for (const flags of values.flags) {
  const web = await startTarget(flags || '(Node defaults)', [...flags.split(/\s+/).filter(Boolean), 'server/main.ts'], {
    DATABASE_URL: url, ENCRYPTION_KEY: secretKey.toString('hex'), LOG_LEVEL: 'warn',
    RATE_LIMIT_PER_KEY: '1000000000', RATE_LIMIT_PER_IP: '1000000000',
  }, '/health');
  const idle = await currentRssMb(web.child.pid);
  const rates: number[] = [];
  for (const request of [
    () => ({ method: 'GET' as const, path: `${API_PREFIX}/items?limit=100` }),
    () => ({
      method: 'POST' as const, path: `${API_PREFIX}/stock-adjustments`,
      body: JSON.stringify({ itemId: pick(seeded.itemIds.slice(0, 1000)), locationId: pick(seeded.locationIds), quantity: 1, reason: 'bench' }),
    }),
  ]) {
    const result = await autocannon({
      url: web.base, connections: 50, duration: 8,
      headers: { 'x-api-key': seeded.apiKey, 'content-type': 'application/json' },
      requests: [{ setupRequest: (defaults) => ({ ...defaults, ...request() }) }],
    });
    rates.push(Math.round(result.requests.average));
  }
  rows.push([web.name, String(idle), String(await peakRssMb(web.child.pid)), String(rates[0]), String(rates[1])]);
  await stopTarget(web);
}
await db.destroy();
await dropDatabase(server.adminUrl, database);
await server.stop();

process.stdout.write('\n| web process flags | idle RSS MB | peak RSS MB | list req/s | adjustments req/s |\n|---|---:|---:|---:|---:|\n');
for (const row of rows) process.stdout.write(`| ${row.join(' | ')} |\n`);

// PostgreSQL stops while the web process serves writes, then comes back: requests fail fast with 503 (never a
// hang, never a 500), /health says 503, the same process serves again without a restart, every write that got a
// 2xx is there, and nothing is half-written.
import test from 'ava';
import { createDb } from '../../db/knex.ts';
import { createLogger } from '../../shared/logger.ts';
import { client } from '../helpers/client.ts';
import { ledgerMismatches } from '../helpers/ledger.ts';
import { eventually } from '../helpers/eventually.ts';
import { baseUrlOf, load, newKey, ownPostgres, runConsistencyCheck, sleep, startWeb } from './support.ts';

const OUTAGE_MS = 5000;

test('a PostgreSQL restart under write load: fast 503s, recovery without a restart, no lost or half-written write', async (t) => {
  // Setup: a database of this test's own, the web process, an item and a location.
  const pg = await ownPostgres('outage');
  t.teardown(() => pg.destroy());
  const db = createDb(pg.url, 2, createLogger('silent'));
  t.teardown(() => db.destroy());
  const { accountId, key } = await newKey(db);
  const web = await startWeb(pg.url);
  t.teardown(() => { web.child.kill('SIGKILL'); });
  const api = client(baseUrlOf(web), key);
  const itemId = (await api.post('/items', { sku: 'OUTAGE', name: 'Outage item' })).body.id;
  const locationId = (await api.post('/locations', { name: 'Main' })).body.id;

  // Action: writes in 6 loops; PostgreSQL stops for OUTAGE_MS in the middle, then starts again.
  const createdItems: string[] = [];
  const createdAdjustments: string[] = [];
  const unavailable: Array<{ body: unknown; retryAfter: string | null }> = [];
  const write = async (n: number) => {
    const response = n % 2
      ? await api.post('/items', { sku: `LOAD-${n}`, name: 'Written under load' })
      : await api.post('/stock-adjustments', { itemId, locationId, quantity: 1, reason: `load ${n}` });
    if (response.status === 201) (n % 2 ? createdItems : createdAdjustments).push(response.body.id);
    if (response.status === 503) unavailable.push({ body: response.body, retryAfter: response.headers.get('retry-after') });
    return response.status;
  };
  let finish!: () => void;
  const running = load(6, new Promise<void>((resolve) => { finish = resolve; }), write);
  await sleep(1500);
  const stopping = performance.now();
  await pg.stop();
  const stopped = performance.now();
  await sleep(500);
  const healthDown = await api.get('~/health');
  await sleep(OUTAGE_MS - 500);
  await pg.start();
  const restarted = performance.now();
  const recovered = await eventually(async () => (await api.get('~/health')).status === 200, 20_000);
  await sleep(1500);
  finish();
  const results = await running;

  // Assertions: only 201 and 503, all fast; 503s carry the documented body and Retry-After.
  const counts: Record<string, number> = {};
  for (const { status } of results) counts[status] = (counts[status] ?? 0) + 1;
  const faults = web.lines.filter((line) => line.includes('unhandled error'));
  t.deepEqual(Object.keys(counts).sort(), ['201', '503'], `statuses seen: ${JSON.stringify(counts)}\n${faults.join('\n')}`);
  const slowest = Math.max(...results.map((r) => r.ms));
  t.true(slowest < 4000, `slowest answer ${Math.round(slowest)} ms`);
  t.true(unavailable.length > 0);
  for (const answer of unavailable) {
    t.deepEqual(answer, { body: { error: 'The database is unavailable; retry shortly' }, retryAfter: '2' });
  }
  t.is(healthDown.status, 503);
  t.deepEqual(web.lines.filter((line) => line.trim() && !line.startsWith('{')), [], 'the web process logged JSON only');
  const warnings = web.lines.filter((line) => line.includes('"database unavailable"')).map((line) => JSON.parse(line));
  t.true(warnings.length >= 1 && warnings.length <= OUTAGE_MS / 1000 + 3, `${warnings.length} warnings for ${unavailable.length} 503s: one a second`);
  t.true(warnings.every((warning) => warning.answered503 >= 1));
  t.true(recovered, 'the same web process serves again');
  const firstServed = Math.min(...results.filter((r) => r.status === 201 && r.at > restarted).map((r) => r.at));
  t.true(Number.isFinite(firstServed), 'writes succeed again after the restart');

  // Every 2xx is there; nothing half-written: each adjustment has its movement and its event, levels add up.
  const stored = await db('items').where({ account_id: accountId }).whereIn('id', createdItems).count({ n: '*' }).first();
  t.is(Number(stored!.n), createdItems.length);
  const adjustments = await db('stock_adjustments').where({ account_id: accountId }).select('id');
  const storedIds = new Set(adjustments.map((row) => row.id as string));
  t.true(createdAdjustments.every((id) => storedIds.has(id)), 'every acknowledged adjustment is stored');
  const movements = await db('stock_movements').where({ account_id: accountId, type: 'adjustment' }).count({ n: '*' }).first();
  const events = await db('events').where({ account_id: accountId, type: 'stock.adjusted' }).count({ n: '*' }).first();
  t.is(Number(movements!.n), adjustments.length);
  t.is(Number(events!.n), adjustments.length);
  t.deepEqual(await ledgerMismatches(db, accountId), []);
  const check = await runConsistencyCheck(pg.url);
  t.is(check.code, 0, check.output);

  const during = results.filter((r) => r.at > stopped && r.at < restarted);
  t.log(`requests: ${results.length} (${JSON.stringify(counts)}); during the ${OUTAGE_MS} ms outage: ${during.length} answered, ` +
    `${during.filter((r) => r.status === 201).length} served, ${during.filter((r) => r.status === 503).length} 503; ` +
    `slowest answer ${Math.round(slowest)} ms; stop took ${Math.round(stopped - stopping)} ms; ` +
    `first write served ${Math.round(firstServed - restarted)} ms after PostgreSQL was back`);
});

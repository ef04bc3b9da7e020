// Bulk writes: items upserted by sku and stock adjusted, up to 1,000 rows a request, all or none, set-based.
import test from 'ava';
import { createDb } from '../db/knex.ts';
import { useHarness } from './helpers/harness.ts';
import { footprint } from './helpers/ledger.ts';
import { consistent, eventsOf, levelOf, stock, warehouse } from './helpers/warehouse.ts';

const h = useHarness(test);

const ITEM_TABLES = ['items', 'events'];
const STOCK_TABLES = ['stock_adjustments', 'stock_levels', 'stock_movements', 'events'];

test('items upsert by sku: new ones created, changed ones updated, the rest left alone; events only for what changed', async (t) => {
  const s = await warehouse(h);
  const before = await eventsOf(h, s.accountId, 'item.updated');

  const batch = await s.api.post('/items/batch', {
    items: [
      { sku: 'NEW-1', name: 'New one', price: 2.5 },
      { sku: 'BOLT', price: 0.4, description: 'Zinc plated' },
      { sku: 'NUT', name: 'Nut', price: 0.1 },
      { sku: 'NEW-2', name: 'New two', unit: 'box', barcode: null },
    ],
  });

  t.is(batch.status, 200);
  t.like(batch.body, { created: 2, updated: 1, unchanged: 1 });
  t.deepEqual(batch.body.data.map((item: { sku: string }) => item.sku), ['NEW-1', 'BOLT', 'NUT', 'NEW-2']);
  t.like(batch.body.data, [
    { name: 'New one', price: 2.5, unit: 'pcs', description: null },
    { id: s.boltId, name: 'Bolt', price: 0.4, description: 'Zinc plated' },
    { id: s.nutId, price: 0.1 },
    { name: 'New two', unit: 'box' },
  ]);
  t.deepEqual((await s.api.get(`/items/${s.boltId}`)).body, batch.body.data[1]);
  t.deepEqual((await eventsOf(h, s.accountId, 'item.created')).slice(-2), [batch.body.data[0], batch.body.data[3]]);
  t.deepEqual((await eventsOf(h, s.accountId, 'item.updated')).slice(before.length), [batch.body.data[1]]);

  const again = await s.api.post('/items/batch', { items: [{ sku: 'NEW-1', name: 'New one' }, { sku: 'BOLT', price: 0.4 }] });
  t.like(again.body, { created: 0, updated: 0, unchanged: 2 });
  t.is((await eventsOf(h, s.accountId, 'item.updated')).length, before.length + 1, 'nothing changed, nothing recorded');
});

test('a bad item batch is one 400 naming every problem of every row, a sku twice by both rows; nothing is written', async (t) => {
  const s = await warehouse(h);
  const before = await footprint(h.db, s.accountId, ITEM_TABLES);
  const rows = Array.from({ length: 500 }, (_, i) => ({ sku: `ROW-${i}`, name: `Row ${i}`, price: 1 }));
  rows[412] = { ...rows[412]!, price: -1 };
  rows[7] = { sku: 'ROW-7', price: 1 } as (typeof rows)[number];
  rows[9] = { ...rows[9]!, sku: 'ROW-3' };

  const bad = await s.api.post('/items/batch', { items: [...rows, 'not an item'] });

  t.is(bad.status, 400);
  t.deepEqual(bad.body.errors.map((e: { path: string }) => e.path).sort(), [
    'items[3].sku', 'items[412].price', 'items[500]', 'items[7].name', 'items[9].sku',
  ]);
  t.like(bad.body.errors.find((e: { path: string }) => e.path === 'items[9].sku'), { message: '"ROW-3" is also at items[3]: send each sku once' });
  t.like(bad.body.errors.find((e: { path: string }) => e.path === 'items[7].name'), { message: 'is required: no item of your account has sku "ROW-7" yet' });
  for (const body of [{ items: [] }, { items: {} }, { items: Array.from({ length: 1001 }, (_, i) => ({ sku: `X-${i}`, name: 'x' })) }, {}]) {
    t.is((await s.api.post('/items/batch', body)).status, 400, JSON.stringify(body).slice(0, 40));
  }
  const huge = await s.api.post('/items/batch', { items: Array.from({ length: 900 }, (_, i) => ({ sku: `H-${i}`, name: 'x'.repeat(1200) })) });
  t.is(huge.status, 413, 'a body past the limit');
  t.deepEqual(await footprint(h.db, s.accountId, ITEM_TABLES), before);
});

test('batch adjustments apply in order, one movement each with its own reason; each answers the level it left', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 2);

  const batch = await s.api.post('/stock-adjustments/batch', {
    adjustments: [
      { itemId: s.boltId, locationId: s.mainId, quantity: 10, reason: 'delivery' },
      { sku: 'NUT', locationId: s.backId, quantity: 3, reason: 'found' },
      { sku: 'BOLT', locationId: s.mainId, quantity: -11, reason: 'shipped' },
      { itemId: s.boltId, locationId: s.mainId, quantity: 0.5, reason: 'recount' },
    ],
  });

  t.is(batch.status, 201);
  t.deepEqual(batch.body.data.map((a: { quantity: number; stockLevel: { quantity: number } }) => [a.quantity, a.stockLevel.quantity]), [[10, 12], [3, 3], [-11, 1], [0.5, 1.5]]);
  t.deepEqual((await s.api.get(`/stock-adjustments/${batch.body.data[2].id}`)).body, batch.body.data[2]);
  const movements = (await s.api.get(`/stock-movements?itemId=${s.boltId}&type=adjustment`)).body.data.slice(1);
  // One statement's movements share their time: the ledger lists them by id, the batch's order is in its answer.
  t.deepEqual(movements.map((m: { reason: string; source: { id: string } }) => [m.reason, m.source.id]).sort(),
    [['delivery', batch.body.data[0].id], ['shipped', batch.body.data[2].id], ['recount', batch.body.data[3].id]].sort());
  t.is((await levelOf(s, s.boltId)).quantity, 1.5);
  await consistent(t, h, s.accountId);
});

test('a batch with a shortfall anywhere is one 409 naming every short level, even one short only on the way; nothing is written', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 2);
  const before = await footprint(h.db, s.accountId, STOCK_TABLES);

  const short = await s.api.post('/stock-adjustments/batch', {
    adjustments: [
      { itemId: s.boltId, locationId: s.mainId, quantity: -3, reason: 'lost' },
      { itemId: s.nutId, locationId: s.mainId, quantity: -1, reason: 'lost' },
      { itemId: s.nutId, locationId: s.backId, quantity: 5, reason: 'found' },
    ],
  });
  const dip = await s.api.post('/stock-adjustments/batch', {
    adjustments: [
      { itemId: s.boltId, locationId: s.mainId, quantity: -5, reason: 'out first' },
      { itemId: s.boltId, locationId: s.mainId, quantity: 10, reason: 'then in' },
    ],
  });

  t.is(short.status, 409);
  t.deepEqual(short.body.shortages.map((x: { itemId: string; requested: number }) => [x.itemId, x.requested]).sort(), [[s.boltId, 3], [s.nutId, 1]].sort());
  t.is(dip.status, 409, 'the level would go below zero before the delivery row');
  t.like(dip.body, { shortages: [{ itemId: s.boltId, requested: 5 }] });
  t.deepEqual(await footprint(h.db, s.accountId, STOCK_TABLES), before);
  await consistent(t, h, s.accountId);
});

test('a batch is one request against the rate limit and replays under its Idempotency-Key', async (t) => {
  // A key used by no other app: the count is shared by every app on the database.
  const s = await h.newAccount();
  const app = await h.startApp({ rateLimitPerKey: 3 });
  const api = app.api(s.key);
  const rows = Array.from({ length: 1000 }, (_, i) => ({ sku: `RL-${i}`, name: `Limited ${i}` }));
  const key = { headers: { 'Idempotency-Key': 'batch-1' } };
  try {
    const first = await api.post('/items/batch', { items: rows }, key);
    const replay = await api.post('/items/batch', { items: rows }, key);
    t.is(first.status, 200);
    t.like(first.body, { created: 1000 });
    t.is(replay.headers.get('idempotent-replayed'), 'true');
    t.deepEqual(replay.body, first.body);
    t.is(replay.headers.get('x-ratelimit-remaining'), '1', '1,000 rows, two requests');
  } finally {
    await app.close();
  }
});

test('a batch of 1,000 rows takes the statements a batch of 2 does', async (t) => {
  const s = await warehouse(h);
  const db = createDb(h.databaseUrl, 5);
  let statements = 0;
  db.on('query', (query: { sql: string }) => { if (!query.sql.includes('api_keys')) statements += 1; });
  const app = await h.startApp({}, { db });
  const api = app.api(s.key);
  const count = async (path: string, body: unknown) => {
    statements = 0;
    const response = await api.post(path, body);
    t.true(response.status < 300, JSON.stringify(response.body).slice(0, 200));
    return statements;
  };
  const items = (n: number, round: number, prefix = 'S') => ({ items: Array.from({ length: n }, (_, i) => ({ sku: `${prefix}-${i}`, name: `Item ${i} ${round}` })) });
  const adjustments = (n: number) => ({ adjustments: Array.from({ length: n }, (_, i) => ({ sku: `S-${i}`, locationId: s.mainId, quantity: 1, reason: 'in' })) });
  try {
    const two = await count('/items/batch', items(2, 0, 'T'));
    t.is(await count('/items/batch', items(1000, 1)), two, 'inserts');
    t.is(await count('/items/batch', items(1000, 2)), await count('/items/batch', items(2, 3)), 'updates');
    t.is(await count('/stock-adjustments/batch', adjustments(1000)), await count('/stock-adjustments/batch', adjustments(2)), 'adjustments');
  } finally {
    await app.close();
    await db.destroy();
  }
});

test('race: batches sharing new and existing skus in different orders all succeed; each sku is one item', async (t) => {
  const s = await warehouse(h);
  const skus = Array.from({ length: 300 }, (_, i) => `RACE-${i}`);
  const shuffled = (seed: number) => [...skus].sort((a, b) => ((a.length * 31 + Number(a.slice(5)) * seed) % 97) - ((b.length * 31 + Number(b.slice(5)) * seed) % 97));
  const batch = (order: string[], round: number) => s.api.post('/items/batch', { items: order.map((sku) => ({ sku, name: `${sku} ${round}` })) });

  const results = await Promise.all([1, 2, 3, 5, 7, 11].map((seed) => batch(shuffled(seed), seed)));

  t.deepEqual(results.map((r) => [r.status, r.body.error]), results.map(() => [200, undefined]));
  t.is(results.reduce((sum, r) => sum + r.body.created, 0), 300, 'each sku created once');
  t.is(Number((await h.db('items').where({ account_id: s.accountId }).whereLike('sku', 'RACE-%').count({ n: '*' }).first())!.n), 300);
});

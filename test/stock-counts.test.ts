// Stock counts: levels set to what was counted, by `count` movements computed under the levels' locks, with
// compare-and-set on what the counter saw.
import { randomUUID } from 'node:crypto';
import test from 'ava';
import { createDb } from '../db/knex.ts';
import { moveStock } from '../db/stock.ts';
import { statementsOf, waitsForLock } from './helpers/statements.ts';
import { useHarness } from './helpers/harness.ts';
import { footprint } from './helpers/ledger.ts';
import { consistent, eventsOf, levelOf, stock, warehouse } from './helpers/warehouse.ts';

const h = useHarness(test);

const TABLES = ['stock_counts', 'stock_count_lines', 'stock_levels', 'stock_movements', 'events'];

test('a count sets each level to what was counted: count movements for the differences, none where equal; lines say before and after', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  await stock(s, s.nutId, 4);

  const counted = await s.api.post('/stock-counts', {
    locationId: s.mainId, reason: 'Aisle 4',
    lines: [{ itemId: s.boltId, countedQuantity: 7.5, expectedQuantity: 10 }, { sku: 'NUT', countedQuantity: 4 }],
  });

  t.is(counted.status, 201);
  t.like(counted.body, { locationId: s.mainId, reason: 'Aisle 4', createdBy: s.userId });
  t.deepEqual(counted.body.lines, [
    {
      itemId: s.boltId, sku: 'BOLT', countedQuantity: 7.5, previousQuantity: 10, difference: -2.5,
      stockLevel: { quantity: 7.5, reserved: 0, available: 7.5, incoming: 0, oversold: false },
    },
    {
      itemId: s.nutId, sku: 'NUT', countedQuantity: 4, previousQuantity: 4, difference: 0,
      stockLevel: { quantity: 4, reserved: 0, available: 4, incoming: 0, oversold: false },
    },
  ]);
  t.is((await levelOf(s, s.boltId)).quantity, 7.5);
  const movements = (await s.api.get('/stock-movements?type=count')).body.data;
  t.like(movements, [{ itemId: s.boltId, quantity: -2.5, reason: 'Aisle 4', source: { type: 'stock_count', id: counted.body.id } }]);
  t.is(movements.length, 1, 'no movement where the count agreed');
  t.is((await eventsOf(h, s.accountId, 'stock.adjusted')).length, 3, 'two opening adjustments and one count');
  t.deepEqual((await s.api.get(`/stock-counts/${counted.body.id}`)).body, counted.body);
  t.deepEqual((await s.api.get(`/stock-counts?locationId=${s.mainId}`)).body.data, [counted.body]);

  // An item never stocked here: its level is created at what was counted.
  const fresh = await s.api.post('/stock-counts', { locationId: s.backId, lines: [{ sku: 'BOLT', countedQuantity: 3 }] });
  t.like(fresh.body.lines, [{ previousQuantity: 0, difference: 3, stockLevel: { quantity: 3 } }]);
  await consistent(t, h, s.accountId);
});

test('a line whose expectedQuantity no longer holds makes the count a 409 naming every stale line; nothing is written', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  await stock(s, s.nutId, 4);
  const before = await footprint(h.db, s.accountId, TABLES);

  const stale = await s.api.post('/stock-counts', {
    locationId: s.mainId,
    lines: [{ itemId: s.boltId, countedQuantity: 9, expectedQuantity: 11 }, { itemId: s.nutId, countedQuantity: 1, expectedQuantity: 3 }],
  });

  t.is(stale.status, 409);
  t.deepEqual(stale.body, {
    error: 'The count is stale: 2 lines no longer hold their expectedQuantity; nothing was changed (see `stale`)',
    stale: [
      { itemId: s.boltId, locationId: s.mainId, expectedQuantity: 11, quantity: 10 },
      { itemId: s.nutId, locationId: s.mainId, expectedQuantity: 3, quantity: 4 },
    ],
  });
  t.deepEqual(await footprint(h.db, s.accountId, TABLES), before);
});

test('race: two counts expecting the same quantity: one is applied, the other is stale', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);

  const results = await Promise.all([8, 12].map((countedQuantity) =>
    s.api.post('/stock-counts', { locationId: s.mainId, lines: [{ itemId: s.boltId, countedQuantity, expectedQuantity: 10 }] })));

  t.deepEqual(results.map((r) => r.status).sort(), [201, 409]);
  const won = results.find((r) => r.status === 201)!.body.lines[0].countedQuantity;
  t.like(results.find((r) => r.status === 409)!.body, { stale: [{ expectedQuantity: 10, quantity: won }] });
  t.is((await levelOf(s, s.boltId)).quantity, won);
  await consistent(t, h, s.accountId);
});

test.serial('a count is its lookups and one write; a level that changed between its read and its write makes it read again', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);

  // Every line with its expectedQuantity: nothing to read. The lookups (location and items, at once), then the write.
  const expected = await statementsOf(async () => t.is((await s.api.post('/stock-counts', {
    locationId: s.mainId, lines: [{ itemId: s.boltId, countedQuantity: 9, expectedQuantity: 10 }],
  })).status, 201));
  t.is(expected.length, 3, expected.join('\n---\n'));
  t.regex(expected[2]!, /insert into stock_levels[\s\S]*insert into stock_counts[\s\S]*insert into events/);

  // Without: the level is read first. Another transaction adds 2 and holds the level while the count's write waits
  // for it, then commits: the write finds 11, not the 9 read, and the count runs again on 11.
  const holder = await h.db.transaction();
  await moveStock(holder, {
    accountId: s.accountId, userId: s.userId, type: 'adjustment', reason: 'Meanwhile', source: { type: 'stock_adjustment', id: randomUUID() },
    changes: [{ itemId: s.boltId, locationId: s.mainId, quantity: 2 }],
  });
  let counting: Promise<{ status: number; body: { id: string; lines: unknown[] } }> | undefined;
  const statements = await statementsOf(async () => {
    counting = s.api.post('/stock-counts', { locationId: s.mainId, lines: [{ itemId: s.boltId, countedQuantity: 4 }] });
    t.true(await waitsForLock(h.db), 'the count waits for the level');
    await holder.commit();
    await counting;
  });
  const counted = await counting!;
  t.is(counted.status, 201, JSON.stringify(counted.body));
  const kinds = statements.map((text) => (/insert into stock_counts/.test(text) ? 'write' : /select s\.item_id/.test(text) ? 'read' : 'the lookups'));
  t.deepEqual(kinds.filter((kind) => kind !== 'the lookups'), ['read', 'write', 'read', 'write'], 'the first write stopped; the level was read again');
  t.like(counted.body.lines, [{ countedQuantity: 4, previousQuantity: 11, difference: -7, stockLevel: { quantity: 4 } }]);
  t.deepEqual((await s.api.get(`/stock-counts/${counted.body.id}`)).body, counted.body);
  await consistent(t, h, s.accountId);
});

test('a count records what is there: it may take reserved stock and leave the level oversold, and says so', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  await s.api.post('/reservations', { itemId: s.boltId, locationId: s.mainId, quantity: 6 });

  const counted = await s.api.post('/stock-counts', { locationId: s.mainId, lines: [{ itemId: s.boltId, countedQuantity: 4 }] });

  t.deepEqual(counted.body.lines[0].stockLevel, { quantity: 4, reserved: 6, available: -2, incoming: 0, oversold: true });
  t.like(await levelOf(s, s.boltId), { oversold: true });
  await consistent(t, h, s.accountId);
});

test('bad counts are 400s naming every problem: items twice, unknown, neither or both ways of naming; too many or no lines', async (t) => {
  const s = await warehouse(h);
  const before = await footprint(h.db, s.accountId, TABLES);

  const bad = await s.api.post('/stock-counts', {
    locationId: s.mainId,
    lines: [
      { itemId: s.boltId, countedQuantity: 1 }, { sku: 'BOLT', countedQuantity: 2 }, { sku: 'NOPE', countedQuantity: 1 },
      { countedQuantity: 1 }, { itemId: s.nutId, sku: 'NUT', countedQuantity: 1 }, { itemId: s.nutId, countedQuantity: -1 }, 'row',
    ],
  });
  t.is(bad.status, 400);
  t.deepEqual(bad.body.errors, [
    { path: 'lines[5].countedQuantity', message: bad.body.errors[0].message },
    { path: 'lines[6]', message: bad.body.errors[1].message },
    { path: 'lines[2].sku', message: 'no item with this sku in your account' },
    { path: 'lines[3].itemId', message: 'is required, or sku: name the item by one of them' },
    { path: 'lines[4].sku', message: 'send itemId or sku, not both' },
    { path: 'lines[1]', message: 'counts the same item as lines[0] (BOLT): count each item once' },
  ]);
  const many = await s.api.post('/stock-counts', { locationId: s.mainId, lines: Array.from({ length: 1001 }, () => ({ itemId: s.boltId, countedQuantity: 1 })) });
  t.is(many.status, 400);
  t.is((await s.api.post('/stock-counts', { locationId: s.mainId, lines: [] })).status, 400);
  t.is((await s.api.post('/stock-counts', { locationId: s.mainId, lines: {} })).status, 400);
  t.deepEqual(await footprint(h.db, s.accountId, TABLES), before);
});

test('a count of 1,000 lines takes the statements a count of 2 does', async (t) => {
  const s = await warehouse(h);
  const skus = Array.from({ length: 1000 }, (_, i) => ({ sku: `C-${i}`, name: `Counted ${i}` }));
  t.is((await s.api.post('/items/batch', { items: skus })).status, 200);
  const db = createDb(h.databaseUrl, 5);
  let statements = 0;
  db.on('query', (query: { sql: string }) => { if (!query.sql.includes('api_keys')) statements += 1; });
  const app = await h.startApp({}, { db });
  try {
    // Every line changes its level (up), so that both take the same path.
    const count = async (n: number) => {
      statements = 0;
      const response = await app.api(s.key).post('/stock-counts', {
        locationId: s.mainId, lines: skus.slice(0, n).map(({ sku }, i) => ({ sku, countedQuantity: n + i })),
      });
      t.is(response.status, 201);
      return statements;
    };
    const two = await count(2);
    t.is(await count(1000), two);
  } finally {
    await app.close();
    await db.destroy();
  }
});

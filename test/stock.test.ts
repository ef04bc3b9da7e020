import test from 'ava';
import { moveStock } from '../db/stock.ts';
import { ConflictError } from '../shared/errors.ts';
import { useHarness, type TestAccount } from './helpers/harness.ts';
import { footprint as countRows, ledgerMismatches as mismatches } from './helpers/ledger.ts';
import { statementsOf } from './helpers/statements.ts';
import { dispatchJobKey } from '../shared/events.ts';

const h = useHarness(test);

interface Setup extends TestAccount {
  itemId: string;
  mainId: string;
  backId: string;
}

async function setup(): Promise<Setup> {
  const account = await h.newAccount();
  const item = await account.api.post('/items', { sku: 'BOLT', name: 'Bolt' });
  const main = await account.api.post('/locations', { name: 'Main', code: 'MAIN' });
  const back = await account.api.post('/locations', { name: 'Back room', code: 'BACK' });
  return { ...account, itemId: item.body.id, mainId: main.body.id, backId: back.body.id };
}

async function level(s: Setup, locationId: string): Promise<number> {
  const { body } = await s.api.get(`/stock-levels?itemId=${s.itemId}&locationId=${locationId}`);
  return body.data[0]?.quantity ?? 0;
}

const TABLES = ['stock_movements', 'stock_adjustments', 'stock_transfers', 'events'];
const footprint = (accountId: string) => countRows(h.db, accountId, TABLES);
const ledgerMismatches = (accountId: string) => mismatches(h.db, accountId);

const adjust = (s: Setup, quantity: number, extra: Record<string, unknown> = {}) =>
  s.api.post('/stock-adjustments', { itemId: s.itemId, locationId: s.mainId, quantity, reason: 'cycle count', ...extra });

// Serial: nothing else runs in this process meanwhile, so every statement seen is the request's.
test.serial('an adjustment and a transfer are each one statement: no BEGIN or COMMIT, the record written with its move', async (t) => {
  const s = await setup();
  t.is((await adjust(s, 5)).status, 201);
  const adjustment = await statementsOf(async () => t.is((await adjust(s, -2)).status, 201));
  t.is(adjustment.length, 1, adjustment.join('\n---\n'));
  t.regex(adjustment[0]!, /insert into stock_levels[\s\S]*insert into stock_movements[\s\S]*insert into stock_adjustments[\s\S]*insert into events/);
  const transfer = await statementsOf(async () => t.is((await s.api.post('/stock-transfers', {
    itemId: s.itemId, fromLocationId: s.mainId, toLocationId: s.backId, quantity: 1,
  })).status, 201));
  t.is(transfer.length, 1, transfer.join('\n---\n'));
  t.regex(transfer[0]!, /insert into stock_transfers/);
  // Refused: the same one statement, and the 409 names the level as it stood under its lock.
  const refused = await statementsOf(async () => t.like((await adjust(s, -100)).body, { available: 2, requested: 100 }));
  t.is(refused.length, 1, refused.join('\n---\n'));
  t.deepEqual(await footprint(s.accountId), { stock_movements: 4, stock_adjustments: 2, stock_transfers: 1, events: 5, jobs: 5 });
});

test('+10 then -3 leaves 7; the response carries the new level', async (t) => {
  const s = await setup();
  const first = await adjust(s, 10, { reason: 'received' });
  t.is(first.status, 201);
  t.like(first.body, { itemId: s.itemId, locationId: s.mainId, quantity: 10, reason: 'received', stockLevel: { quantity: 10 }, createdBy: s.userId });
  const second = await adjust(s, -3, { reason: 'damaged' });
  t.is(second.status, 201);
  t.deepEqual(second.body.stockLevel, { quantity: 7, reserved: 0, available: 7, incoming: 0, oversold: false });
  t.is(await level(s, s.mainId), 7);

  t.deepEqual((await s.api.get(`/stock-adjustments/${second.body.id}`)).body, second.body);
  const listed = await s.api.get('/stock-adjustments');
  t.deepEqual(listed.body.data.map((a: { id: string }) => a.id), [first.body.id, second.body.id]);
  t.deepEqual(await ledgerMismatches(s.accountId), []);
});

test('a change that would go below zero is a 409 and writes nothing', async (t) => {
  const s = await setup();
  await adjust(s, 5);
  const before = await footprint(s.accountId);
  const refused = await adjust(s, -6);
  t.is(refused.status, 409);
  t.deepEqual(refused.body, {
    error: 'Insufficient stock: 5 on hand, 6 needed', itemId: s.itemId, locationId: s.mainId, available: 5, reserved: 0, requested: 6,
    shortages: [{ itemId: s.itemId, locationId: s.mainId, available: 5, reserved: 0, requested: 6 }],
  });
  t.is(await level(s, s.mainId), 5);
  t.deepEqual(await footprint(s.accountId), before);

  const nothingThere = await adjust(s, -1, { locationId: s.backId });
  t.is(nothingThere.status, 409);
  t.is(nothingThere.body.available, 0);
});

test('quantity 0, a missing reason and bad references are 400s naming each field', async (t) => {
  const s = await setup();
  const other = await setup();
  const cases: Array<[Record<string, unknown>, string[]]> = [
    [{ quantity: 0 }, ['quantity']],
    [{ reason: undefined }, ['reason']],
    [{ reason: '  ' }, ['reason']],
    [{ quantity: '3' }, ['quantity']],
    [{ quantity: 1.0000001 }, ['quantity']],
    [{ itemId: '00000000-0000-4000-8000-000000000000' }, ['itemId']],
    [{ itemId: 'not-a-uuid', locationId: 'nor-this' }, ['itemId', 'locationId']],
    [{ itemId: other.itemId }, ['itemId']],
    [{ locationId: other.mainId }, ['locationId']],
    [{ itemId: undefined, locationId: undefined, quantity: undefined, reason: undefined }, ['itemId', 'locationId', 'quantity', 'reason']],
  ];
  for (const [change, paths] of cases) {
    const { status, body } = await adjust(s, 1, change);
    t.is(status, 400, JSON.stringify(change));
    t.deepEqual(body.errors.map((e: { path: string }) => e.path).sort(), paths, JSON.stringify(change));
  }
  t.deepEqual(await footprint(s.accountId), { stock_movements: 0, stock_adjustments: 0, stock_transfers: 0, events: 1, jobs: 1 }, 'only the item.created of setup');
});

test('1.5 and -0.25 round-trip exactly; decimal sums stay exact', async (t) => {
  const s = await setup();
  t.is((await adjust(s, 1.5)).body.quantity, 1.5);
  const down = await adjust(s, -0.25);
  t.is(down.body.quantity, -0.25);
  t.is(down.body.stockLevel.quantity, 1.25);
  await adjust(s, 0.1, { locationId: s.backId });
  t.is((await adjust(s, 0.2, { locationId: s.backId })).body.stockLevel.quantity, 0.3);
  const movements = await s.api.get(`/stock-movements?locationId=${s.mainId}`);
  t.deepEqual(movements.body.data.map((m: { quantity: number }) => m.quantity), [1.5, -0.25]);
  t.is(await level(s, s.mainId), 1.25);
});

test('a transfer moves stock in one transaction, or not at all', async (t) => {
  const s = await setup();
  await adjust(s, 10);
  const moved = await s.api.post('/stock-transfers', { itemId: s.itemId, fromLocationId: s.mainId, toLocationId: s.backId, quantity: 4, reason: 'restock shelf' });
  t.is(moved.status, 201);
  t.like(moved.body, { quantity: 4, reason: 'restock shelf', stockLevels: { from: { quantity: 6 }, to: { quantity: 4 } } });
  t.is(await level(s, s.mainId), 6);
  t.is(await level(s, s.backId), 4);
  t.deepEqual((await s.api.get(`/stock-transfers/${moved.body.id}`)).body, moved.body);

  const movements = await s.api.get('/stock-movements?type=transfer');
  // Both movements share one timestamp, so the list orders them by id: compare as a set.
  const pairs = movements.body.data.map((m: { quantity: number; locationId: string }) => [m.locationId, m.quantity]);
  t.deepEqual(pairs.sort((a: [string, number], b: [string, number]) => a[1] - b[1]), [[s.mainId, -4], [s.backId, 4]]);
  for (const movement of movements.body.data) t.deepEqual(movement.source, { type: 'stock_transfer', id: moved.body.id });

  const before = await footprint(s.accountId);
  const tooMuch = await s.api.post('/stock-transfers', { itemId: s.itemId, fromLocationId: s.backId, toLocationId: s.mainId, quantity: 5 });
  t.is(tooMuch.status, 409);
  t.like(tooMuch.body, { locationId: s.backId, available: 4, requested: 5 });
  t.deepEqual(await footprint(s.accountId), before);
  t.is(await level(s, s.mainId), 6);

  const same = await s.api.post('/stock-transfers', { itemId: s.itemId, fromLocationId: s.mainId, toLocationId: s.mainId, quantity: 1 });
  t.is(same.status, 400);
  t.deepEqual(same.body.errors, [{ path: 'toLocationId', message: 'must differ from fromLocationId' }]);
  // Shape and references in one 400: every problem of the body at once.
  const invalid = await s.api.post('/stock-transfers', { itemId: s.itemId, fromLocationId: s.mainId, toLocationId: 'nope', quantity: -1 });
  t.deepEqual(invalid.body.errors.map((e: { path: string }) => e.path), ['quantity', 'toLocationId']);
  const sameAndUnknown = await s.api.post('/stock-transfers', { itemId: 'no-such-item', fromLocationId: s.mainId, toLocationId: s.mainId, quantity: 1 });
  t.deepEqual(sameAndUnknown.body.errors, [
    { path: 'toLocationId', message: 'must differ from fromLocationId' },
    { path: 'itemId', message: 'no item with this id in your account' },
  ]);
  const unknown = await s.api.post('/stock-transfers', { itemId: s.itemId, fromLocationId: s.mainId, toLocationId: 'nope', quantity: 1 });
  t.deepEqual(unknown.body.errors.map((e: { path: string }) => e.path), ['toLocationId']);
  t.deepEqual(await ledgerMismatches(s.accountId), []);
});

test('50 concurrent -1 adjustments against 30: exactly 30 succeed, 20 are 409s, the level ends at 0', async (t) => {
  const s = await setup();
  await adjust(s, 30);
  const results = await Promise.all(Array.from({ length: 50 }, () => adjust(s, -1)));
  const statuses = results.map((r) => r.status);
  t.is(statuses.filter((status) => status === 201).length, 30);
  t.is(statuses.filter((status) => status === 409).length, 20);
  t.is(await level(s, s.mainId), 0);
  const levelsSeen = results.filter((r) => r.status === 201).map((r) => r.body.stockLevel.quantity).sort((a, b) => a - b);
  t.deepEqual(levelsSeen, Array.from({ length: 30 }, (_, i) => i), 'each success saw a distinct level: no lost update');
  t.deepEqual(await ledgerMismatches(s.accountId), []);
  t.is((await footprint(s.accountId)).stock_movements, 31);
});

test('concurrent transfers A→B and B→A of the same item do not deadlock', async (t) => {
  const s = await setup();
  await adjust(s, 100);
  await adjust(s, 100, { locationId: s.backId });
  const transfer = (from: string, to: string) =>
    s.api.post('/stock-transfers', { itemId: s.itemId, fromLocationId: from, toLocationId: to, quantity: 1 });
  const results = await Promise.all(Array.from({ length: 40 }, (_, i) => (i % 2 ? transfer(s.mainId, s.backId) : transfer(s.backId, s.mainId))));
  t.deepEqual([...new Set(results.map((r) => r.status))], [201]);
  t.is(await level(s, s.mainId), 100);
  t.is(await level(s, s.backId), 100);
  t.deepEqual(await ledgerMismatches(s.accountId), []);
});

test('concurrent changes to different items do not wait on each other\'s rows', async (t) => {
  const s = await setup();
  const second = await s.api.post('/items', { sku: 'NUT', name: 'Nut' });
  await adjust(s, 10);
  await adjust(s, 10, { itemId: second.body.id });
  // Hold a lock on the first item's level in an open transaction; the second item must still move.
  const trx = await h.db.transaction();
  try {
    await trx('stock_levels').where({ item_id: s.itemId }).forUpdate().select('id');
    const other = await adjust(s, -1, { itemId: second.body.id });
    t.is(other.status, 201);
  } finally {
    await trx.rollback();
  }
});

test('a committed movement leaves one movement, one event and one job; a rolled-back one leaves none', async (t) => {
  const s = await setup();
  const start = await footprint(s.accountId);
  const done = await adjust(s, 2);
  const after = await footprint(s.accountId);
  t.deepEqual(after, { ...start, stock_movements: start.stock_movements! + 1, stock_adjustments: start.stock_adjustments! + 1, events: start.events! + 1, jobs: start.jobs! + 1 });

  const event = await h.db('events').where({ account_id: s.accountId, type: 'stock.adjusted' }).first();
  t.like(event.data, {
    itemId: s.itemId, locationId: s.mainId, quantity: 2, type: 'adjustment', reason: 'cycle count', createdBy: s.userId,
    source: { type: 'stock_adjustment', id: done.body.id }, stockLevel: { quantity: 2 },
  });
  // The public jobs view has no payload column; the job's key names the event.
  const job = await h.db.raw(
    `select j.payload from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
     where t.identifier = 'events__dispatch' and j.key = ?`, [dispatchJobKey(event.id)]);
  t.deepEqual(job.rows.map((r: { payload: unknown }) => r.payload), [{ eventId: event.id }]);

  // A multi-line change whose transaction rolls back: the first line applied, the second could not.
  const attempt = h.db.transaction((trx) => moveStock(trx, {
    accountId: s.accountId, userId: s.userId, type: 'adjustment', reason: 'test', source: { type: 'stock_adjustment', id: done.body.id },
    changes: [{ itemId: s.itemId, locationId: s.mainId, quantity: 5 }, { itemId: s.itemId, locationId: s.backId, quantity: -1 }],
  }));
  await t.throwsAsync(attempt, { instanceOf: ConflictError });
  t.deepEqual(await footprint(s.accountId), after);
  t.is(await level(s, s.mainId), 2);

  // And one that fails after moveStock returned, for any reason.
  await t.throwsAsync(h.db.transaction(async (trx) => {
    await moveStock(trx, {
      accountId: s.accountId, userId: s.userId, type: 'adjustment', reason: 'test', source: { type: 'stock_adjustment', id: done.body.id },
      changes: [{ itemId: s.itemId, locationId: s.mainId, quantity: 5 }],
    });
    throw new Error('something later failed');
  }), { message: 'something later failed' });
  t.deepEqual(await footprint(s.accountId), after);
});

test('levels and movements: filters, isolation and paging', async (t) => {
  const s = await setup();
  const other = await setup();
  await adjust(s, 3);
  await adjust(s, 2, { locationId: s.backId });
  await adjust(other, 9);

  const levels = await s.api.get('/stock-levels');
  t.is(levels.body.data.length, 2);
  t.deepEqual(Object.keys(levels.body.data[0]).sort(), ['available', 'incoming', 'itemId', 'locationId', 'oversold', 'quantity', 'reserved', 'updatedAt']);
  t.deepEqual((await s.api.get(`/stock-levels?locationId=${s.backId}`)).body.data.map((l: { quantity: number }) => l.quantity), [2]);
  t.deepEqual((await s.api.get(`/stock-levels?locationId=${other.mainId}`)).body.data, [], 'another account\'s location shows nothing');
  t.deepEqual((await s.api.get('/stock-levels?itemId=garbage')).body.data, []);

  const movements = await s.api.get('/stock-movements?limit=1');
  t.is(movements.body.data.length, 1);
  t.regex(movements.headers.get('link') ?? '', /rel="next"/);
  t.is((await s.api.get('/stock-movements?type=adjustment')).body.data.length, 2);
  t.is((await s.api.get('/stock-movements?type=purchase_receipt')).body.data.length, 0);
  const badType = await s.api.get('/stock-movements?type=theft');
  t.is(badType.status, 400);
  t.is(badType.body.errors[0].path, 'type');

  const adjustment = (await other.api.get('/stock-adjustments')).body.data[0];
  t.is((await s.api.get(`/stock-adjustments/${adjustment.id}`)).status, 404);
  t.deepEqual((await s.api.get('/stock-adjustments?itemId=' + other.itemId)).body.data, []);
});

test('item changes record item.created and item.updated events with the item as the API returns it', async (t) => {
  const account = await h.newAccount();
  const created = await account.api.post('/items', { sku: 'EV-1', name: 'Evented' });
  await account.api.patch(`/items/${created.body.id}`, {});
  const patched = await account.api.patch(`/items/${created.body.id}`, { name: 'Renamed' });
  const archived = await account.api.delete(`/items/${created.body.id}`);
  await account.api.delete(`/items/${created.body.id}`);
  await account.api.post('/items', { sku: 'EV-1', name: 'Duplicate' });

  const events = await h.db('events').where({ account_id: account.accountId }).orderBy('seq').select('type', 'data');
  t.deepEqual(events.map((e) => e.type), ['item.created', 'item.updated', 'item.updated']);
  t.deepEqual(events.map((e) => e.data), [created.body, patched.body, archived.body]);
});

test('moveStock nets changes to one level and names every shortage in one 409', async (t) => {
  const s = await setup();
  await adjust(s, 5);
  await adjust(s, 1, { locationId: s.backId });
  const before = await footprint(s.accountId);
  const move = (changes: Array<{ locationId: string; quantity: number }>) => h.db.transaction((trx) => moveStock(trx, {
    accountId: s.accountId, userId: s.userId, type: 'adjustment', reason: 'test', source: { type: 'stock_adjustment', id: s.itemId },
    changes: changes.map((change) => ({ itemId: s.itemId, ...change })),
  }));

  // 3 + 3 from 5 on hand: each line alone fits, their total does not.
  const netted = await t.throwsAsync(move([{ locationId: s.mainId, quantity: -3 }, { locationId: s.mainId, quantity: -3 }]), { instanceOf: ConflictError });
  t.deepEqual(netted.details.shortages, [{ itemId: s.itemId, locationId: s.mainId, available: 5, reserved: 0, requested: 6 }]);

  const both = await t.throwsAsync(move([{ locationId: s.mainId, quantity: -7 }, { locationId: s.backId, quantity: -2 }]), { instanceOf: ConflictError });
  t.regex(both.message, /for 2 items/);
  // ava compares Sets in insertion order, and shortages come in item/location id order: compare sorted lists.
  t.deepEqual((both.details.shortages as Array<{ locationId: string }>).map((x) => x.locationId).sort(), [s.mainId, s.backId].sort());
  t.deepEqual(await footprint(s.accountId), before);

  // Lines that net to what is on hand apply, each as its own movement, the events carrying the final level.
  const applied = await move([{ locationId: s.mainId, quantity: -2 }, { locationId: s.mainId, quantity: -3 }]);
  t.deepEqual(applied.map((a) => [a.movement.quantity, a.level.quantity]), [[-2, 0], [-3, 0]]);
  t.deepEqual(await ledgerMismatches(s.accountId), []);
});

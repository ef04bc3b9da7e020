import test from 'ava';
import { createDb } from '../db/knex.ts';
import { useHarness, type TestAccount } from './helpers/harness.ts';
import { footprint as countRows, ledgerMismatches } from './helpers/ledger.ts';
import { statementsOf } from './helpers/statements.ts';
import * as orderNumberSequences from '../db/migrations/019_order_number_sequences.ts';

const h = useHarness(test);

interface Setup extends TestAccount {
  customerId: string;
  boltId: string;
  nutId: string;
  mainId: string;
  backId: string;
}

/** An account with a customer, two priced items (BOLT 0.35, NUT 0.1) and two locations. */
async function setup(): Promise<Setup> {
  const account = await h.newAccount();
  const customer = await account.api.post('/customers', { name: 'Acme Ltd' });
  const bolt = await account.api.post('/items', { sku: 'BOLT', name: 'Bolt', price: 0.35 });
  const nut = await account.api.post('/items', { sku: 'NUT', name: 'Nut', price: 0.1 });
  const main = await account.api.post('/locations', { name: 'Main', code: 'MAIN' });
  const back = await account.api.post('/locations', { name: 'Back room', code: 'BACK' });
  return { ...account, customerId: customer.body.id, boltId: bolt.body.id, nutId: nut.body.id, mainId: main.body.id, backId: back.body.id };
}

const stock = (s: Setup, itemId: string, quantity: number, locationId = s.mainId) =>
  s.api.post('/stock-adjustments', { itemId, locationId, quantity, reason: 'opening count' });

async function level(s: Setup, itemId: string, locationId = s.mainId): Promise<number> {
  const { body } = await s.api.get(`/stock-levels?itemId=${itemId}&locationId=${locationId}`);
  return body.data[0]?.quantity ?? 0;
}

const shapeA = (s: Setup, extra: Record<string, unknown> = {}) =>
  s.api.post('/sales-orders', { customerId: s.customerId, lineItems: [{ itemId: s.boltId, quantity: 3 }, { itemId: s.nutId, quantity: 2 }], ...extra });

const shapeB = (s: Setup, extra: Record<string, unknown> = {}) =>
  s.api.post('/sales-orders', { customerId: s.customerId, items: [{ sku: 'BOLT', quantity: 10, price: 0.3 }], ...extra });

const TABLES = ['sales_orders', 'sales_order_lines', 'stock_levels', 'stock_movements', 'events'];
const footprint = (accountId: string) => countRows(h.db, accountId, TABLES);

const paths = (body: { errors: Array<{ path: string }> }) => body.errors.map((e) => e.path).sort();
const eventsOf = (accountId: string, type: string) =>
  h.db('events').where({ account_id: accountId, type }).orderBy('seq').select('data').then((rows) => rows.map((row) => row.data));

// Serial: nothing else runs in this process meanwhile, so every statement seen is the request's.
test.serial('a create is two statements, its lookup and the order; a clash or a shortage stops the second and writes nothing', async (t) => {
  const s = await setup();
  t.is((await stock(s, s.boltId, 5)).status, 201);
  t.is((await stock(s, s.nutId, 4)).status, 201);
  const reserving = { locationId: s.mainId, integrationSourceId: 'shop-1' };
  const sent = await statementsOf(async () => t.is((await shapeA(s, reserving)).status, 201));
  t.is(sent.length, 2, sent.join('\n---\n'));
  t.regex(sent[1]!, /insert into reservations[\s\S]*nextval[\s\S]*insert into sales_orders[\s\S]*insert into sales_order_lines[\s\S]*insert into events/);
  const before = await footprint(s.accountId);

  let existing: { status: number; body: { error: string; existingId: string } } | undefined;
  const again = await statementsOf(async () => { existing = await shapeA(s, { integrationSourceId: 'shop-1' }); });
  t.is(existing!.status, 409);
  t.regex(existing!.body.error, /integrationSourceId "shop-1" already exists/);
  t.is(again.length, 3, 'the lookup, the stopped statement, and what names the existing order');
  t.like((await shapeA(s, { locationId: s.mainId })).body, { shortages: [{ itemId: s.boltId, available: 2, requested: 3 }] });
  t.deepEqual(await footprint(s.accountId), before, 'nothing of the refused creates was written');
  t.is((await shapeB(s)).body.salesOrderNumber, 'SO-000002', 'the refused creates gave their numbers back');
});

test.serial('migration 019 carries each account\'s numbering from its counter row to its sequence, and back', async (t) => {
  const s = await setup();
  t.is((await shapeB(s)).body.salesOrderNumber, 'SO-000001');
  await h.db.transaction((trx) => orderNumberSequences.down(trx));
  t.like(await h.db('account_counters').where({ account_id: s.accountId, name: 'sales_order' }).first(), { value: 1 });
  await h.db('account_counters').where({ account_id: s.accountId }).update({ value: 41 });
  await h.db.transaction((trx) => orderNumberSequences.up(trx));
  t.is((await shapeB(s)).body.salesOrderNumber, 'SO-000042');
});

test('shape A takes item prices and skus; shape B keeps its own; both answer one normalised order', async (t) => {
  const s = await setup();
  const a = await shapeA(s);
  t.is(a.status, 201);
  t.deepEqual(Object.keys(a.body).sort(), [
    'createdAt', 'customerId', 'fulfilledLocationId', 'fulfillments', 'id', 'integrationSourceId', 'lineItems', 'salesOrderNumber', 'status', 'total',
    'updatedAt',
  ]);
  t.like(a.body, { salesOrderNumber: 'SO-000001', integrationSourceId: null, customerId: s.customerId, status: 'open', fulfilledLocationId: null });
  t.deepEqual(a.body.lineItems.map(({ id: _, ...line }: { id: string }) => line), [
    { itemId: s.boltId, sku: 'BOLT', quantity: 3, price: 0.35, quantityFulfilled: 0, quantityReserved: 0 },
    { itemId: s.nutId, sku: 'NUT', quantity: 2, price: 0.1, quantityFulfilled: 0, quantityReserved: 0 },
  ]);
  t.deepEqual(a.body.fulfillments, []);
  t.is(a.body.total, 1.25, '3 × 0.35 + 2 × 0.1, exactly (floats give 1.2499999999999998)');

  const b = await s.api.post('/sales-orders', {
    salesOrderNumber: 'WEB-1001', integrationSourceId: 'shop:77', customerId: s.customerId,
    items: [{ sku: 'NUT', quantity: 3, price: 0.1 }, { sku: 'BOLT', quantity: 0.5, price: 0.000001 }],
  });
  t.is(b.status, 201);
  t.like(b.body, { salesOrderNumber: 'WEB-1001', integrationSourceId: 'shop:77', status: 'open' });
  t.deepEqual(b.body.lineItems.map(({ id: _, ...line }: { id: string }) => line), [
    { itemId: s.nutId, sku: 'NUT', quantity: 3, price: 0.1, quantityFulfilled: 0, quantityReserved: 0 },
    { itemId: s.boltId, sku: 'BOLT', quantity: 0.5, price: 0.000001, quantityFulfilled: 0, quantityReserved: 0 },
  ]);
  t.is(b.body.total, 0.300001, '0.3 + 0.0000005 rounds half up to 6 places');

  t.deepEqual((await s.api.get(`/sales-orders/${a.body.id}`)).body, a.body);
  t.deepEqual((await s.api.get(`/sales-orders/${b.body.id}`)).body, b.body);
  t.is((await shapeB(s)).body.salesOrderNumber, 'SO-000002', 'a caller\'s own number does not use up the sequence');
});

test('a body with several problems names every one, shape and references together', async (t) => {
  const s = await setup();
  const three = await s.api.post('/sales-orders', { items: [{ sku: 'BOLT', quantity: -1, price: 1 }, { sku: 'NOPE', quantity: 1, price: 1 }] });
  t.is(three.status, 400);
  t.deepEqual(three.body, {
    error: 'Validation failed',
    errors: [
      { path: 'customerId', message: 'is required' },
      { path: 'items[0].quantity', message: 'must be greater than 0' },
      { path: 'items[1].sku', message: 'no item with this sku in your account' },
    ],
  });

  const archived = (await s.api.post('/items', { sku: 'OLD', name: 'Old', price: 1 })).body.id;
  await s.api.delete(`/items/${archived}`);
  const unpriced = (await s.api.post('/items', { sku: 'FREE', name: 'Unpriced' })).body.id;
  const many = await s.api.post('/sales-orders', {
    customerId: '00000000-0000-4000-8000-000000000000',
    salesOrderNumber: '',
    lineItems: [
      { itemId: s.boltId, quantity: 'two' },
      { itemId: 'not-an-id', quantity: 1.0000001 },
      { itemId: archived, quantity: 0 },
      { itemId: unpriced, quantity: 1 },
      { quantity: 1, extra: true },
    ],
  });
  t.is(many.status, 400);
  t.deepEqual(many.body.errors.map((e: { path: string; message: string }) => `${e.path}: ${e.message}`).sort(), [
    'customerId: no customer with this id in your account',
    'lineItems[0].quantity: must be a number',
    'lineItems[1].itemId: no item with this id in your account',
    'lineItems[1].quantity: must have at most 6 decimal places',
    'lineItems[2].itemId: this item is archived: restore it (PATCH /items/{id} with archived false) or order another',
    'lineItems[2].quantity: must be greater than 0',
    'lineItems[3].itemId: this item has no price: set its price, or send shape B (items) with an explicit price per line',
    'lineItems[4].extra: is not an allowed field',
    'lineItems[4].itemId: is required',
    'salesOrderNumber: must not be blank',
  ]);

  const prices = await shapeB(s, { items: [{ sku: 'BOLT', quantity: 1, price: -0.01 }, { sku: 'OLD', quantity: 1, price: 1 }, { sku: '', quantity: 1, price: 1 }] });
  t.deepEqual(prices.body.errors, [
    { path: 'items[0].price', message: 'must not be negative' },
    { path: 'items[2].sku', message: 'must not be blank' },
    { path: 'items[1].sku', message: 'this item is archived: restore it (PATCH /items/{id} with archived false) or order another' },
  ], 'a path the shape check named is not named again by the reference check');

  const tooMuch = await shapeB(s, { items: [{ sku: 'BOLT', quantity: 999_999_999, price: 2 }] });
  t.deepEqual(tooMuch.body.errors, [{ path: 'items', message: 'the order total (quantity × price over the lines) must be at most 999999999.999999' }]);
  t.deepEqual(await footprint(s.accountId), { sales_orders: 0, sales_order_lines: 0, stock_levels: 0, stock_movements: 0, events: 5, jobs: 5 }, 'only item events');
});

test('both lists, neither, empty lists and bodies that are not objects are 400s', async (t) => {
  const s = await setup();
  const both = await s.api.post('/sales-orders', {
    customerId: s.customerId, lineItems: [{ itemId: s.boltId, quantity: 1 }], items: [{ sku: 'BOLT', quantity: 1, price: 1 }],
  });
  t.is(both.status, 400);
  t.deepEqual(both.body.errors, [{ path: 'items', message: 'send either lineItems (shape A) or items (shape B), not both' }]);

  const neither = await s.api.post('/sales-orders', { customerId: s.customerId });
  t.deepEqual(neither.body.errors, [{
    path: 'lineItems', message: 'is required: a list of lines, as lineItems [{itemId, quantity}] (shape A) or items [{sku, quantity, price}] (shape B)',
  }]);
  const neitherAndMore = await s.api.post('/sales-orders', { customerId: 7, integrationSourceId: '', colour: 'red' });
  t.deepEqual(paths(neitherAndMore.body), ['colour', 'customerId', 'integrationSourceId', 'lineItems'], 'the shared fields are still checked');

  for (const body of [{ customerId: s.customerId, lineItems: [] }, { customerId: s.customerId, items: [] }]) {
    const empty = await s.api.post('/sales-orders', body);
    t.is(empty.status, 400);
    t.deepEqual(empty.body.errors, [{ path: Object.keys(body)[1], message: 'must not be empty' }]);
  }
  const notAList = await shapeA(s, { lineItems: { itemId: s.boltId, quantity: 1 } });
  t.deepEqual(notAList.body.errors, [{ path: 'lineItems', message: 'must be an array' }]);
  const tooMany = await shapeA(s, { lineItems: Array.from({ length: 1001 }, () => ({ itemId: s.boltId, quantity: 1 })) });
  t.deepEqual(tooMany.body.errors, [{ path: 'lineItems', message: 'must have at most 1000 entries' }]);

  for (const raw of ['[]', '"order"', 'null', '{"customerId":']) {
    const response = await s.api.post('/sales-orders', raw);
    t.is(response.status, 400, raw);
    t.is(response.body.errors.length, 1, raw);
  }
  t.is((await footprint(s.accountId)).sales_orders, 0);
});

test('a second order with the same salesOrderNumber or integrationSourceId is a 409 carrying the existing id', async (t) => {
  const s = await setup();
  const first = await shapeB(s, { salesOrderNumber: 'WEB-1', integrationSourceId: 'shop:1' });
  t.is(first.status, 201);

  const sameNumber = await shapeA(s, { salesOrderNumber: 'WEB-1' });
  t.is(sameNumber.status, 409);
  t.deepEqual(sameNumber.body, { error: 'A sales order with salesOrderNumber "WEB-1" already exists', existingId: first.body.id, salesOrderNumber: 'WEB-1' });

  const sameSource = await shapeB(s, { integrationSourceId: 'shop:1' });
  t.is(sameSource.status, 409);
  t.deepEqual(sameSource.body, { error: 'A sales order with integrationSourceId "shop:1" already exists', existingId: first.body.id, integrationSourceId: 'shop:1' });

  const retry = await shapeB(s, { salesOrderNumber: 'WEB-1', integrationSourceId: 'shop:1' });
  t.is(retry.status, 409);
  t.is(retry.body.existingId, first.body.id);

  const other = await setup();
  t.is((await shapeB(other, { salesOrderNumber: 'WEB-1', integrationSourceId: 'shop:1' })).status, 201, 'unique per account only');
  t.like(await footprint(s.accountId), { sales_orders: 1, sales_order_lines: 1 });
  t.is((await eventsOf(s.accountId, 'sales_order.created')).length, 1, 'no event for a refused duplicate');
});

test('two identical creates racing: one 201, one 409 naming it, one order', async (t) => {
  const s = await setup();
  for (const extra of [{ integrationSourceId: 'shop:race' }, { salesOrderNumber: 'RACE-1' }, { salesOrderNumber: 'RACE-2', integrationSourceId: 'shop:race-2' }]) {
    const results = await Promise.all([shapeB(s, extra), shapeB(s, extra)]);
    t.deepEqual(results.map((r) => r.status).sort(), [201, 409], JSON.stringify(extra));
    const winner = results.find((r) => r.status === 201)!;
    t.is(results.find((r) => r.status === 409)!.body.existingId, winner.body.id);
  }
  t.is((await footprint(s.accountId)).sales_orders, 3);
  t.is((await eventsOf(s.accountId, 'sales_order.created')).length, 3);
});

test('20 concurrent creates without numbers get 20 distinct numbers, skipping one a caller took', async (t) => {
  const s = await setup();
  t.is((await shapeA(s, { salesOrderNumber: 'SO-000003' })).status, 201);
  const results = await Promise.all(Array.from({ length: 20 }, (_, i) => (i % 2 ? shapeA(s) : shapeB(s))));
  t.deepEqual([...new Set(results.map((r) => r.status))], [201]);
  const numbers = results.map((r) => r.body.salesOrderNumber).sort();
  const expected = Array.from({ length: 21 }, (_, i) => `SO-${String(i + 1).padStart(6, '0')}`).filter((n) => n !== 'SO-000003');
  t.deepEqual(numbers, expected);
  t.is((await footprint(s.accountId)).sales_orders, 21);
});

test('fulfilment takes every line out of stock at the location, records movements and events, and sets fulfilled', async (t) => {
  const s = await setup();
  await stock(s, s.boltId, 10);
  await stock(s, s.nutId, 2);
  const order = (await shapeA(s, { lineItems: [{ itemId: s.boltId, quantity: 3 }, { itemId: s.nutId, quantity: 2 }, { itemId: s.boltId, quantity: 1.5 }] })).body;

  const done = await s.api.post(`/sales-orders/${order.id}/fulfill`, { locationId: s.mainId });
  t.is(done.status, 200);
  t.like(done.body, {
    id: order.id, status: 'fulfilled', fulfilledLocationId: s.mainId, total: order.total,
    lineItems: order.lineItems.map((line: { quantity: number }) => ({ ...line, quantityFulfilled: line.quantity })),
  });
  t.true(done.body.updatedAt >= order.updatedAt);
  const [fulfillment] = done.body.fulfillments;
  t.deepEqual(done.body.fulfillments, [{
    id: fulfillment.id, salesOrderId: order.id, locationId: s.mainId, reference: null, createdBy: s.userId, createdAt: fulfillment.createdAt,
    lines: order.lineItems.map((line: { id: string; itemId: string; quantity: number }) => ({ lineItemId: line.id, itemId: line.itemId, quantity: line.quantity })),
  }], 'one fulfilment of everything');
  t.deepEqual((await s.api.get(`/sales-orders/${order.id}`)).body, done.body);
  t.is(await level(s, s.boltId), 5.5);
  t.is(await level(s, s.nutId), 0);

  const movements = (await s.api.get('/stock-movements?type=sales_fulfillment')).body.data;
  t.deepEqual(movements.map((m: { quantity: number }) => m.quantity).sort(), [-3, -2, -1.5].sort());
  for (const movement of movements) {
    t.like(movement, { locationId: s.mainId, reason: `Sales order ${order.salesOrderNumber}`, source: { type: 'sales_fulfillment', id: fulfillment.id }, createdBy: s.userId });
  }
  t.deepEqual(await eventsOf(s.accountId, 'sales_order.fulfilled'), [done.body]);
  t.is((await eventsOf(s.accountId, 'stock.adjusted')).length, 2 + 3, 'the opening counts and one per line');
  t.deepEqual(await ledgerMismatches(h.db, s.accountId), []);
});

test('a fulfilment with one line short is a 409 naming it, and changes nothing', async (t) => {
  const s = await setup();
  await stock(s, s.boltId, 10);
  await stock(s, s.nutId, 1);
  const order = (await shapeA(s)).body;
  const before = await footprint(s.accountId);

  const short = await s.api.post(`/sales-orders/${order.id}/fulfill`, { locationId: s.mainId });
  t.is(short.status, 409);
  t.deepEqual(short.body.shortages, [{ itemId: s.nutId, locationId: s.mainId, available: 1, reserved: 0, requested: 2 }]);
  t.regex(short.body.error, /Insufficient stock/);

  const nowhere = await s.api.post(`/sales-orders/${order.id}/fulfill`, { locationId: s.backId });
  t.is(nowhere.status, 409);
  t.deepEqual(nowhere.body.shortages.map((x: { itemId: string }) => x.itemId).sort(), [s.boltId, s.nutId].sort());

  t.deepEqual(await footprint(s.accountId), before);
  t.is(await level(s, s.boltId), 10);
  t.is(await level(s, s.nutId), 1);
  t.is((await s.api.get(`/sales-orders/${order.id}`)).body.status, 'open');
  t.deepEqual(await ledgerMismatches(h.db, s.accountId), []);
});

test('every move other than open → fulfilled / cancelled is a 409 naming the status and the operation', async (t) => {
  const s = await setup();
  await stock(s, s.boltId, 100);
  await stock(s, s.nutId, 100);
  const fulfilled = (await shapeA(s)).body;
  await s.api.post(`/sales-orders/${fulfilled.id}/fulfill`, { locationId: s.mainId });
  const cancelled = (await shapeA(s)).body;
  // No body at all, and an empty JSON body, both cancel.
  const cancel = await s.api.request('POST', `/sales-orders/${cancelled.id}/cancel`);
  t.is(cancel.status, 200);
  t.like(cancel.body, { status: 'cancelled', fulfilledLocationId: null });
  t.is((await s.api.post(`/sales-orders/${(await shapeA(s)).body.id}/cancel`, {})).status, 200);

  const before = await footprint(s.accountId);
  const moves: Array<[string, string, string]> = [
    [fulfilled.id, 'fulfill', 'fulfilled'], [fulfilled.id, 'cancel', 'fulfilled'],
    [cancelled.id, 'fulfill', 'cancelled'], [cancelled.id, 'cancel', 'cancelled'],
  ];
  for (const [id, operation, status] of moves) {
    const refused = await s.api.post(`/sales-orders/${id}/${operation}`, operation === 'fulfill' ? { locationId: s.mainId } : undefined);
    t.is(refused.status, 409);
    t.deepEqual(refused.body, { error: `Cannot ${operation} a sales order that is ${status}`, status, operation });
  }
  t.deepEqual(await footprint(s.accountId), before);
  t.is(await level(s, s.boltId), 97);

  const badBody = await s.api.post(`/sales-orders/${cancelled.id}/fulfill`, {});
  t.deepEqual(badBody.body.errors, [{ path: 'locationId', message: 'is required' }]);
  const unknownLocation = await s.api.post(`/sales-orders/${(await shapeA(s)).body.id}/fulfill`, { locationId: 'nowhere' });
  t.deepEqual(unknownLocation.body.errors, [{ path: 'locationId', message: 'no location with this id in your account' }]);
});

test('a fulfilment names a bad location with a 400 before it looks the order up: a missing order with a good location is a 404', async (t) => {
  const s = await setup();
  const missing = '00000000-0000-4000-8000-000000000000';
  const badLocation = await s.api.post(`/sales-orders/${missing}/fulfill`, { locationId: 'nowhere' });
  t.is(badLocation.status, 400);
  t.deepEqual(badLocation.body.errors, [{ path: 'locationId', message: 'no location with this id in your account' }]);
  const goodLocation = await s.api.post(`/sales-orders/${missing}/fulfill`, { locationId: s.mainId });
  t.is(goodLocation.status, 404);
  t.deepEqual(goodLocation.body, { error: 'Sales order not found' });
});

test('two fulfilments of one order racing: one wins, stock is taken once', async (t) => {
  const s = await setup();
  await stock(s, s.boltId, 10);
  await stock(s, s.nutId, 10);
  const order = (await shapeA(s)).body;
  const results = await Promise.all(Array.from({ length: 4 }, () => s.api.post(`/sales-orders/${order.id}/fulfill`, { locationId: s.mainId })));
  t.deepEqual(results.map((r) => r.status).sort(), [200, 409, 409, 409]);
  for (const refused of results.filter((r) => r.status === 409)) t.is(refused.body.status, 'fulfilled');
  t.is(await level(s, s.boltId), 7);
  t.is(await level(s, s.nutId), 8);
  t.is((await eventsOf(s.accountId, 'sales_order.fulfilled')).length, 1);
  t.deepEqual(await ledgerMismatches(h.db, s.accountId), []);

  const cancelRace = (await shapeA(s)).body;
  const mixed = await Promise.all([
    s.api.post(`/sales-orders/${cancelRace.id}/fulfill`, { locationId: s.mainId }),
    s.api.post(`/sales-orders/${cancelRace.id}/cancel`),
  ]);
  t.deepEqual(mixed.map((r) => r.status).sort(), [200, 409]);
  t.is(await level(s, s.boltId), mixed[0]!.status === 200 ? 4 : 7);
});

test('another account\'s orders, customers, items and locations are never visible', async (t) => {
  const s = await setup();
  const other = await setup();
  await stock(other, other.boltId, 50);
  const theirs = (await shapeA(other, { integrationSourceId: 'shop:theirs' })).body;

  t.is((await s.api.get(`/sales-orders/${theirs.id}`)).status, 404);
  t.deepEqual((await s.api.get(`/sales-orders/${theirs.id}`)).body, { error: 'Sales order not found' });
  t.is((await s.api.post(`/sales-orders/${theirs.id}/fulfill`, { locationId: s.mainId })).status, 404);
  t.is((await s.api.post(`/sales-orders/${theirs.id}/cancel`)).status, 404);
  t.is((await s.api.get('/sales-orders/not-a-uuid')).status, 404);
  t.deepEqual((await s.api.get('/sales-orders')).body.data, []);
  t.deepEqual((await s.api.get('/sales-orders?integrationSourceId=shop:theirs')).body.data, []);
  t.is((await shapeA(s, { integrationSourceId: 'shop:theirs' })).status, 201, 'their integration ids are not ours');

  const borrowed = await s.api.post('/sales-orders', { customerId: other.customerId, lineItems: [{ itemId: other.boltId, quantity: 1 }] });
  t.deepEqual(borrowed.body.errors, [
    { path: 'customerId', message: 'no customer with this id in your account' },
    { path: 'lineItems[0].itemId', message: 'no item with this id in your account' },
  ]);
  const mine = (await shapeA(s)).body;
  const elsewhere = await s.api.post(`/sales-orders/${mine.id}/fulfill`, { locationId: other.mainId });
  t.deepEqual(elsewhere.body.errors, [{ path: 'locationId', message: 'no location with this id in your account' }]);
  t.is((await other.api.get(`/sales-orders/${theirs.id}`)).body.status, 'open');
  t.is(await level(other, other.boltId), 50);
});

test('one event per change, carrying the order as the API returns it; none when the change rolls back', async (t) => {
  const s = await setup();
  await stock(s, s.boltId, 5);
  await stock(s, s.nutId, 5);
  const a = (await shapeA(s)).body;
  const b = (await shapeB(s)).body;
  const fulfilled = (await s.api.post(`/sales-orders/${a.id}/fulfill`, { locationId: s.mainId })).body;
  const cancelled = (await s.api.post(`/sales-orders/${b.id}/cancel`)).body;
  t.deepEqual(await eventsOf(s.accountId, 'sales_order.created'), [a, b]);
  // Byte for byte, keys in the API's order: the order's statement filled in its number and timestamps.
  const stored = await h.db('events').where({ account_id: s.accountId, type: 'sales_order.created' }).orderBy('seq').select(h.db.raw('data::text as text'));
  t.deepEqual(stored.map((row) => row.text), [JSON.stringify(a), JSON.stringify(b)]);
  t.deepEqual(await eventsOf(s.accountId, 'sales_order.fulfilled'), [fulfilled]);
  t.deepEqual(await eventsOf(s.accountId, 'sales_order.cancelled'), [cancelled]);
  const counts = await footprint(s.accountId);
  t.is(counts.jobs, counts.events, 'every event has its dispatch job');

  const c = (await shapeB(s, { items: [{ sku: 'BOLT', quantity: 50, price: 1 }] })).body;
  const before = await footprint(s.accountId);
  t.is((await s.api.post(`/sales-orders/${c.id}/fulfill`, { locationId: s.mainId })).status, 409);
  t.is((await shapeB(s, { salesOrderNumber: c.salesOrderNumber })).status, 409);
  t.deepEqual(await footprint(s.accountId), before);
});

test('lists: filters, paging with each order\'s lines, updatedSince', async (t) => {
  const s = await setup();
  const otherCustomer = (await s.api.post('/customers', { name: 'Other customer' })).body.id;
  const first = (await shapeA(s)).body;
  const second = (await shapeB(s, { customerId: otherCustomer, integrationSourceId: 'shop:2' })).body;
  const third = (await shapeB(s)).body;
  const cancelled = (await s.api.post(`/sales-orders/${second.id}/cancel`)).body;

  const all = await s.api.get('/sales-orders');
  t.deepEqual(all.body.data, [first, cancelled, third]);
  const ids = (query: string) => s.api.get(`/sales-orders?${query}`).then((r) => r.body.data.map((o: { id: string }) => o.id));
  t.deepEqual(await ids('status=open'), [first.id, third.id]);
  t.deepEqual(await ids('status=cancelled'), [second.id]);
  t.deepEqual(await ids(`customerId=${otherCustomer}`), [second.id]);
  t.deepEqual(await ids('customerId=garbage'), []);
  t.deepEqual(await ids('integrationSourceId=shop:2'), [second.id]);
  t.deepEqual(await ids(`updatedSince=${encodeURIComponent(cancelled.updatedAt)}`), [second.id]);
  t.is((await s.api.get('/sales-orders?status=shipped')).body.errors[0].path, 'status');

  const page = await s.api.get('/sales-orders?limit=2');
  t.deepEqual(page.body.data, [first, cancelled]);
  const next = /<([^>]+)>; rel="next"/.exec(page.headers.get('link') ?? '')?.[1];
  t.truthy(next);
  t.deepEqual((await s.api.get(next!)).body.data, [third]);
  t.deepEqual((await s.api.get('/sales-orders?page=2&size=2')).body.data, [third]);
});

test('statements per request do not grow with the number of lines or orders', async (t) => {
  const s = await setup();
  const db = createDb(h.databaseUrl, 5);
  let statements = 0;
  // The key lookup's once-a-minute last-used write is not the route's doing.
  db.on('query', (query: { sql: string }) => { if (!query.sql.includes('api_keys')) statements += 1; });
  const app = await h.startApp({}, { db });
  const api = app.api(s.key);
  const count = async (run: () => Promise<unknown>) => {
    statements = 0;
    await run();
    return statements;
  };
  try {
    const lines = (n: number) => Array.from({ length: n }, (_, i) => ({ itemId: i % 2 ? s.boltId : s.nutId, quantity: 1 }));
    const one = await count(() => api.post('/sales-orders', { customerId: s.customerId, lineItems: lines(1) }));
    const forty = await count(() => api.post('/sales-orders', { customerId: s.customerId, lineItems: lines(40) }));
    t.is(forty, one, 'create');
    const bySku = (n: number) => Array.from({ length: n }, (_, i) => ({ sku: i % 2 ? 'BOLT' : 'NUT', quantity: 1, price: 1 }));
    t.is(await count(() => api.post('/sales-orders', { customerId: s.customerId, items: bySku(40) })), one, 'create, shape B');

    const onePage = await count(() => api.get('/sales-orders?limit=1'));
    const threePage = await count(() => api.get('/sales-orders?limit=3'));
    t.is(threePage, onePage, 'list');
  } finally {
    await app.close();
    await db.destroy();
  }
});

test('the OpenAPI document shows the create body as oneOf the two shapes, with examples and every status', async (t) => {
  const { body } = await h.app.api().get('/openapi.json');
  const create = body.paths['/sales-orders'].post;
  t.deepEqual(create.requestBody.content['application/json'].schema, {
    oneOf: [{ $ref: '#/components/schemas/SalesOrderShapeA' }, { $ref: '#/components/schemas/SalesOrderShapeB' }],
  });
  const { SalesOrderShapeA: a, SalesOrderShapeB: b } = body.components.schemas;
  t.deepEqual(a.required, ['customerId', 'lineItems']);
  t.deepEqual(b.required, ['customerId', 'items']);
  t.is(a.properties.lineItems.minItems, 1);
  t.truthy(a.example.lineItems);
  t.truthy(b.example.items);
  t.true(['201', '400', '409', '413', '415'].every((status) => status in create.responses));
  for (const operation of ['fulfill', 'cancel']) {
    const responses = body.paths[`/sales-orders/{id}/${operation}`].post;
    t.true(['200', '400', '404', '409'].every((status) => status in responses.responses), operation);
    t.regex(responses.description, /Allowed from `open`/);
  }
  t.true('404' in body.paths['/sales-orders/{id}'].get.responses);
  const listParams = body.paths['/sales-orders'].get.parameters.map((p: { name: string }) => p.name);
  for (const name of ['status', 'customerId', 'integrationSourceId', 'updatedSince', 'page', 'limit']) t.true(listParams.includes(name), name);
});

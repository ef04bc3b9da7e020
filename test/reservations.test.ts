// Availability: reservations as rows, levels that say what can still be sold, and who may take reserved stock.
import test from 'ava';
import { makeExpireReservation } from '../jobs/reservations__expire.ts';
import { startWorker } from '../jobs/worker.ts';
import { createLogger } from '../shared/logger.ts';
import { eventually } from './helpers/eventually.ts';
import { testConfig, useHarness } from './helpers/harness.ts';
import { consistent, eventsOf, levelOf as level, stock, warehouse, type Warehouse } from './helpers/warehouse.ts';

const h = useHarness(test);

const order = (s: Warehouse, lines: Array<[string, number]>, extra: Record<string, unknown> = {}) =>
  s.api.post('/sales-orders', { customerId: s.customerId, lineItems: lines.map(([itemId, quantity]) => ({ itemId, quantity })), ...extra });

test('a manual hold counts in reserved and leaves available; DELETE releases it; levels answer all four numbers', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);

  const held = await s.api.post('/reservations', { itemId: s.boltId, locationId: s.mainId, quantity: 3, reference: 'cart-1' });
  t.is(held.status, 201);
  t.like(held.body, {
    itemId: s.boltId, locationId: s.mainId, quantity: 3, status: 'open', source: { type: 'manual' }, reference: 'cart-1',
    expiresAt: null, releaseReason: null, createdBy: s.userId,
  });
  t.deepEqual(await level(s, s.boltId), { quantity: 10, reserved: 3, available: 7, incoming: 0, oversold: false });

  const tooMuch = await s.api.post('/reservations', { itemId: s.boltId, locationId: s.mainId, quantity: 8 });
  t.is(tooMuch.status, 409);
  t.deepEqual(tooMuch.body.shortages, [{ itemId: s.boltId, locationId: s.mainId, available: 7, reserved: 3, requested: 8 }]);
  t.is(tooMuch.body.error, 'Insufficient stock: 7 available (3 more reserved), 8 needed');

  t.deepEqual((await s.api.get(`/reservations/${held.body.id}`)).body, held.body);
  t.deepEqual((await s.api.get(`/reservations?status=open&itemId=${s.boltId}`)).body.data, [held.body]);
  t.deepEqual((await s.api.get(`/reservations?locationId=${s.backId}`)).body.data, []);

  t.is((await s.api.delete(`/reservations/${held.body.id}`)).status, 204);
  t.deepEqual(await level(s, s.boltId), { quantity: 10, reserved: 0, available: 10, incoming: 0, oversold: false });
  t.like((await s.api.get(`/reservations/${held.body.id}`)).body, { status: 'released', releaseReason: 'deleted' });
  const again = await s.api.delete(`/reservations/${held.body.id}`);
  t.is(again.status, 409);
  t.deepEqual(again.body, { error: 'Cannot release a reservation that is released', status: 'released' });
  t.is((await s.api.delete('/reservations/00000000-0000-4000-8000-000000000000')).status, 404);

  const [created] = await eventsOf(h, s.accountId, 'reservation.created');
  t.like(created, { id: held.body.id, status: 'open', stockLevel: { quantity: 10, reserved: 3, available: 7 } });
  const [released] = await eventsOf(h, s.accountId, 'reservation.released');
  t.like(released, { id: held.body.id, status: 'released', reason: 'deleted', stockLevel: { reserved: 0, available: 10 } });
  await consistent(t, h, s.accountId);
});

test('a hold is refused for an archived item, a time already past or a quantity of 0, each named in one 400', async (t) => {
  const s = await warehouse(h);
  await s.api.delete(`/items/${s.nutId}`);
  const refused = await s.api.post('/reservations', { itemId: s.nutId, locationId: 'nowhere', quantity: 0, expiresAt: '2020-01-01T00:00:00Z' });
  t.is(refused.status, 400);
  t.deepEqual(refused.body.errors.map((e: { path: string }) => e.path).sort(), ['expiresAt', 'itemId', 'locationId', 'quantity']);
  t.deepEqual((await s.api.post('/reservations', { itemId: s.boltId, locationId: s.mainId, quantity: 1, expiresAt: 'soon' })).body.errors,
    [{ path: 'expiresAt', message: 'must be an ISO-8601 timestamp, as 2026-12-01T09:00:00Z' }]);
});

test('who may take reserved stock: transfers, components and unreserved fulfilment take only what is available; a loss may take it and says the level is oversold', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  await stock(s, s.nutId, 10);
  await s.api.post('/reservations', { itemId: s.boltId, locationId: s.mainId, quantity: 8 });

  const transfer = await s.api.post('/stock-transfers', { itemId: s.boltId, fromLocationId: s.mainId, toLocationId: s.backId, quantity: 3 });
  t.is(transfer.status, 409);
  t.deepEqual(transfer.body.shortages, [{ itemId: s.boltId, locationId: s.mainId, available: 2, reserved: 8, requested: 3 }]);
  const fits = await s.api.post('/stock-transfers', { itemId: s.boltId, fromLocationId: s.mainId, toLocationId: s.backId, quantity: 2 });
  t.is(fits.status, 201);
  t.like(fits.body.stockLevels.from, { quantity: 8, reserved: 8, available: 0 });

  const production = await s.api.post('/production-records', { itemId: s.nutId, locationId: s.mainId, quantity: 1, components: [{ itemId: s.boltId, quantity: 1 }] });
  t.is(production.status, 409);
  t.is(production.body.shortages[0].itemId, s.boltId);
  const unreserved = (await order(s, [[s.boltId, 1]])).body;
  t.is((await s.api.post(`/sales-orders/${unreserved.id}/fulfill`, { locationId: s.mainId })).status, 409);

  const loss = await stock(s, s.boltId, -5);
  t.is(loss.status, 201);
  t.deepEqual(loss.body.stockLevel, { quantity: 3, reserved: 8, available: -5, incoming: 0, oversold: true });
  const [adjusted] = (await eventsOf(h, s.accountId, 'stock.adjusted')).slice(-1);
  t.like(adjusted, { quantity: -5, stockLevel: { available: -5, oversold: true } });
  t.deepEqual((await s.api.get('/stock-levels?oversold=true')).body.data.map((l: { itemId: string }) => l.itemId), [s.boltId]);
  t.false((await s.api.get('/stock-levels?oversold=false')).body.data.some((l: { itemId: string; locationId: string }) => l.itemId === s.boltId && l.locationId === s.mainId));
  t.is((await stock(s, s.boltId, -4)).status, 409, 'never below zero on hand');
  await consistent(t, h, s.accountId);
});

test('an order with locationId reserves every line there, all or nothing; reserve later; fulfil consumes its own first; completion and cancel release', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 5);
  await stock(s, s.nutId, 5);
  await stock(s, s.boltId, 5, s.backId);

  const reserved = await order(s, [[s.boltId, 3], [s.nutId, 2]], { locationId: s.mainId });
  t.is(reserved.status, 201);
  t.deepEqual(reserved.body.lineItems.map((line: { quantityReserved: number }) => line.quantityReserved), [3, 2]);
  t.like(await level(s, s.boltId), { quantity: 5, reserved: 3, available: 2 });
  const [created] = await eventsOf(h, s.accountId, 'sales_order.created');
  t.deepEqual(created.lineItems.map((line: { quantityReserved: number }) => line.quantityReserved), [3, 2]);

  const ordersBefore = (await s.api.get('/sales-orders')).body.data.length;
  const short = await order(s, [[s.boltId, 3], [s.nutId, 4]], { locationId: s.mainId });
  t.is(short.status, 409);
  t.deepEqual(short.body.shortages, [
    { itemId: s.boltId, locationId: s.mainId, available: 2, reserved: 3, requested: 3 },
    { itemId: s.nutId, locationId: s.mainId, available: 3, reserved: 2, requested: 4 },
  ].sort((a, b) => a.itemId.localeCompare(b.itemId)));
  t.is((await s.api.get('/sales-orders')).body.data.length, ordersBefore, 'nothing written');

  const later = (await s.api.post('/sales-orders', { customerId: s.customerId, items: [{ sku: 'BOLT', quantity: 2, price: 1 }] })).body;
  t.deepEqual(later.lineItems.map((line: { quantityReserved: number }) => line.quantityReserved), [0]);
  const reserving = await s.api.post(`/sales-orders/${later.id}/reserve`, { locationId: s.backId });
  t.is(reserving.status, 200);
  t.deepEqual(reserving.body.lineItems.map((line: { quantityReserved: number }) => line.quantityReserved), [2]);
  t.is((await s.api.post(`/sales-orders/${later.id}/reserve`, { locationId: s.mainId })).body.lineItems[0].quantityReserved, 2, 'nothing left to reserve');
  t.like(await level(s, s.boltId, s.backId), { reserved: 2, available: 3 });

  // Fulfilled at MAIN: its reservations there are consumed, none taken from what is available.
  const fulfilled = await s.api.post(`/sales-orders/${reserved.body.id}/fulfill`, { locationId: s.mainId });
  t.is(fulfilled.status, 200);
  t.deepEqual(fulfilled.body.lineItems.map((line: { quantityReserved: number }) => line.quantityReserved), [0, 0]);
  t.deepEqual(await level(s, s.boltId), { quantity: 2, reserved: 0, available: 2, incoming: 0, oversold: false });
  const consumed = (await s.api.get(`/reservations?salesOrderId=${reserved.body.id}`)).body.data;
  t.deepEqual(consumed.map((r: { status: string; releaseReason: string }) => [r.status, r.releaseReason]), [['consumed', 'fulfilled'], ['consumed', 'fulfilled']]);

  // Fulfilled at MAIN while it held stock at BACK: that is released, as completed.
  const elsewhere = await s.api.post(`/sales-orders/${later.id}/fulfill`, { locationId: s.mainId });
  t.is(elsewhere.status, 200);
  t.like(await level(s, s.boltId, s.backId), { reserved: 0, available: 5 });
  t.like(await level(s, s.boltId), { quantity: 0, reserved: 0 });
  t.like((await s.api.get(`/reservations?salesOrderId=${later.id}`)).body.data[0], { status: 'released', releaseReason: 'completed' });
  const refused = await s.api.post(`/sales-orders/${later.id}/reserve`, { locationId: s.mainId });
  t.deepEqual(refused.body, { error: 'Cannot reserve a sales order that is fulfilled', status: 'fulfilled', operation: 'reserve' });

  const cancelled = (await order(s, [[s.nutId, 1]], { locationId: s.mainId })).body;
  await s.api.post(`/sales-orders/${cancelled.id}/cancel`);
  t.like((await s.api.get(`/reservations?salesOrderId=${cancelled.id}`)).body.data[0], { status: 'released', releaseReason: 'cancelled' });
  t.like(await level(s, s.nutId), { quantity: 3, reserved: 0, available: 3 });

  const reasons = (await eventsOf(h, s.accountId, 'reservation.released')).map((data: { reason: string }) => data.reason).sort();
  t.deepEqual(reasons, ['cancelled', 'completed', 'fulfilled', 'fulfilled']);
  await consistent(t, h, s.accountId);
});

test('race: 20 orders for 1 unit each with 10 available: exactly 10 are created, and 10 are reserved', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  const results = await Promise.all(Array.from({ length: 20 }, () => order(s, [[s.boltId, 1]], { locationId: s.mainId })));
  t.deepEqual(results.map((r) => r.status).sort(), [...Array(10).fill(201), ...Array(10).fill(409)]);
  t.deepEqual(await level(s, s.boltId), { quantity: 10, reserved: 10, available: 0, incoming: 0, oversold: false });
  t.is((await s.api.get('/sales-orders')).body.data.length, 10);
  await consistent(t, h, s.accountId);
});

test('race: a fulfil and a cancel of one reserved order: one wins, and the ledger, reservations and levels agree', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  for (let round = 0; round < 5; round++) {
    const placed = (await order(s, [[s.boltId, 1]], { locationId: s.mainId })).body;
    const results = await Promise.all([
      s.api.post(`/sales-orders/${placed.id}/fulfill`, { locationId: s.mainId }),
      s.api.post(`/sales-orders/${placed.id}/cancel`),
    ]);
    t.deepEqual(results.map((r) => r.status).sort(), [200, 409]);
    const [reservation] = (await s.api.get(`/reservations?salesOrderId=${placed.id}`)).body.data;
    t.is(reservation.status, results[0]!.status === 200 ? 'consumed' : 'released');
  }
  t.like(await level(s, s.boltId), { reserved: 0 });
  await consistent(t, h, s.accountId);
});

test('race: DELETEs and the expiry job of one hold at once release it once; an order\'s hold released while the order is fulfilled goes to one of them', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  const expire = makeExpireReservation(h.db);
  const helpers = { logger: { error: () => {} } } as never;
  for (let round = 0; round < 3; round++) {
    const held = (await s.api.post('/reservations', { itemId: s.boltId, locationId: s.mainId, quantity: 2, expiresAt: new Date(Date.now() + 3_600_000).toISOString() })).body;
    await h.db('reservations').where({ id: held.id }).update({ expires_at: h.db.raw("now() - interval '1 second'") });
    const [deletes] = await Promise.all([
      Promise.all(Array.from({ length: 5 }, () => s.api.delete(`/reservations/${held.id}`))),
      expire({ reservationId: held.id }, helpers),
    ]);
    const winners = deletes.filter((response) => response.status === 204);
    t.true(winners.length <= 1);
    for (const loser of deletes.filter((response) => response.status !== 204)) {
      t.deepEqual([loser.status, loser.body], [409, { error: 'Cannot release a reservation that is released', status: 'released' }]);
    }
    t.like((await s.api.get(`/reservations/${held.id}`)).body, { status: 'released', releaseReason: winners.length ? 'deleted' : 'expired' });
    t.like(await level(s, s.boltId), { quantity: 10, reserved: 0 });
  }
  t.is((await eventsOf(h, s.accountId, 'reservation.released')).length, 3);

  for (let round = 0; round < 5; round++) {
    const placed = (await order(s, [[s.boltId, 1]], { locationId: s.mainId })).body;
    const [hold] = (await s.api.get(`/reservations?salesOrderId=${placed.id}`)).body.data;
    const [released, fulfilled] = await Promise.all([
      s.api.delete(`/reservations/${hold.id}`),
      s.api.post(`/sales-orders/${placed.id}/fulfill`, { locationId: s.mainId }),
    ]);
    // Released first, the fulfilment takes available stock instead.
    t.is(fulfilled.status, 200);
    if (released.status === 204) t.like((await s.api.get(`/reservations/${hold.id}`)).body, { status: 'released' });
    else t.deepEqual([released.status, released.body], [409, { error: 'Cannot release a reservation that is consumed', status: 'consumed' }]);
    t.like(await level(s, s.boltId), { quantity: 9 - round, reserved: 0 });
  }
  await consistent(t, h, s.accountId);
});

test('race: a transfer and an order reserving the same last units: one gets them', async (t) => {
  const s = await warehouse(h);
  for (let round = 0; round < 5; round++) {
    await stock(s, s.nutId, 5);
    const [transfer, placed] = await Promise.all([
      s.api.post('/stock-transfers', { itemId: s.nutId, fromLocationId: s.mainId, toLocationId: s.backId, quantity: 5 }),
      order(s, [[s.nutId, 5]], { locationId: s.mainId }),
    ]);
    t.deepEqual([transfer.status, placed.status].sort(), [201, 409]);
    // Whichever won, nothing is left to promise at MAIN; clear it for the next round.
    t.like(await level(s, s.nutId), { available: 0 });
    if (placed.status === 201) await s.api.post(`/sales-orders/${placed.body.id}/fulfill`, { locationId: s.mainId });
  }
  await consistent(t, h, s.accountId);
});

test('incoming counts what confirmed and on-hold purchase orders still bring, and falls when they are received or cancelled', async (t) => {
  const s = await warehouse(h);
  const purchase = async () => (await s.api.post('/purchase-orders', { supplierName: 'Acme', locationId: s.mainId, lines: [{ itemId: s.boltId, quantity: 10, unitCost: 1 }, { itemId: s.boltId, quantity: 2, unitCost: 1 }] })).body.id;
  const move = (id: string, operation: string) => s.api.post(`/purchase-orders/${id}/${operation}`);

  const first = await purchase();
  t.like(await level(s, s.boltId), { incoming: 0 }, 'a draft is not expected');
  await move(first, 'confirm');
  t.deepEqual(await level(s, s.boltId), { quantity: 0, reserved: 0, available: 0, incoming: 12, oversold: false });
  await move(first, 'hold');
  t.like(await level(s, s.boltId), { incoming: 12 });
  await move(first, 'confirm');
  const closed = await move(first, 'close');
  t.is(closed.status, 200);
  t.deepEqual(await level(s, s.boltId), { quantity: 12, reserved: 0, available: 12, incoming: 0, oversold: false });
  const [received] = (await eventsOf(h, s.accountId, 'stock.adjusted')).slice(-1);
  t.like(received, { type: 'purchase_receipt', stockLevel: { quantity: 12, incoming: 0 } });

  const second = await purchase();
  await move(second, 'hold');
  t.like(await level(s, s.boltId), { incoming: 12 }, 'a draft put on hold is expected');
  await move(second, 'cancel');
  t.like(await level(s, s.boltId), { incoming: 0 });
  await consistent(t, h, s.accountId);
});

test('an expired hold is released once, however many workers run its job; released as expired with the level after', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 4);
  const held = (await s.api.post('/reservations', { itemId: s.boltId, locationId: s.mainId, quantity: 3, expiresAt: new Date(Date.now() + 3_600_000).toISOString() })).body;
  const expire = makeExpireReservation(h.db);
  const helpers = { logger: { error: () => {} } } as never;

  // Not yet due: the job does nothing.
  await expire({ reservationId: held.id }, helpers);
  t.like((await s.api.get(`/reservations/${held.id}`)).body, { status: 'open' });

  await h.db('reservations').where({ id: held.id }).update({ expires_at: h.db.raw("now() - interval '1 second'") });
  await Promise.all([expire({ reservationId: held.id }, helpers), expire({ reservationId: held.id }, helpers)]);
  t.like((await s.api.get(`/reservations/${held.id}`)).body, { status: 'released', releaseReason: 'expired' });
  t.like(await level(s, s.boltId), { reserved: 0, available: 4 });
  const released = await eventsOf(h, s.accountId, 'reservation.released');
  t.is(released.length, 1);
  t.like(released[0], { reason: 'expired', stockLevel: { reserved: 0 } });
  await consistent(t, h, s.accountId);
});

// Serial: the worker takes every job of this file's database.
test.serial('a hold that expired while no worker ran is released when one starts: the job waits in PostgreSQL for its time', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.nutId, 2);
  const held = (await s.api.post('/reservations', { itemId: s.nutId, locationId: s.mainId, quantity: 2, expiresAt: new Date(Date.now() + 800).toISOString() })).body;
  await new Promise((resolve) => setTimeout(resolve, 1200));
  t.like((await s.api.get(`/reservations/${held.id}`)).body, { status: 'open' }, 'nothing releases it without a worker');

  const worker = await startWorker(testConfig(), h.databaseUrl, createLogger('silent'));
  try {
    t.true(await eventually(async () => (await s.api.get(`/reservations/${held.id}`)).body.status === 'released'));
  } finally {
    await worker.stop();
  }
  t.like(await level(s, s.nutId), { reserved: 0, available: 2 });
});

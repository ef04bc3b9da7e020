// Partial fulfilment: an order shipped in parts, from several locations, with its reservations consumed and released.
import test from 'ava';
import { useHarness } from './helpers/harness.ts';
import { statementsOf, waitsForLock } from './helpers/statements.ts';
import { footprint } from './helpers/ledger.ts';
import { consistent, eventsOf, levelOf, stock, warehouse, type Warehouse } from './helpers/warehouse.ts';

const h = useHarness(test);

const TABLES = ['sales_orders', 'sales_order_lines', 'sales_fulfillments', 'sales_fulfillment_lines', 'stock_levels', 'stock_movements', 'reservations', 'events'];

/** An order of 5 BOLT and 2 NUT (lines in that order), reserved at `locationId` when given. */
async function orderOf(s: Warehouse, extra: Record<string, unknown> = {}) {
  const { status, body } = await s.api.post('/sales-orders', {
    customerId: s.customerId, lineItems: [{ itemId: s.boltId, quantity: 5 }, { itemId: s.nutId, quantity: 2 }], ...extra,
  });
  if (status !== 201) throw new Error(`order: ${status} ${JSON.stringify(body)}`);
  return { order: body, bolt: body.lineItems[0].id as string, nut: body.lineItems[1].id as string };
}

const ship = (s: Warehouse, orderId: string, body: Record<string, unknown>) => s.api.post(`/sales-orders/${orderId}/fulfillments`, body);

test('an order shipped from two warehouses: partially_fulfilled, then fulfilled; lines, records, movements and events agree', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 3);
  await stock(s, s.boltId, 10, s.backId);
  await stock(s, s.nutId, 2, s.backId);
  const { order, bolt, nut } = await orderOf(s);

  const first = await ship(s, order.id, { locationId: s.mainId, lines: [{ lineItemId: bolt, quantity: 3 }], reference: 'UPS 1Z999' });

  t.is(first.status, 201);
  const { salesOrder: partial, ...fulfillment } = first.body;
  t.deepEqual(fulfillment, {
    id: fulfillment.id, salesOrderId: order.id, locationId: s.mainId, reference: 'UPS 1Z999',
    lines: [{ lineItemId: bolt, itemId: s.boltId, quantity: 3 }], createdBy: s.userId, createdAt: fulfillment.createdAt,
  });
  t.like(partial, { status: 'partially_fulfilled', fulfilledLocationId: null });
  t.deepEqual(partial.lineItems.map((line: { quantityFulfilled: number }) => line.quantityFulfilled), [3, 0]);
  t.deepEqual(partial.fulfillments, [fulfillment]);
  t.deepEqual((await s.api.get(`/sales-orders/${order.id}`)).body, partial);
  t.deepEqual((await levelOf(s, s.boltId)).quantity, 0);
  const moved = (await s.api.get(`/stock-movements?itemId=${s.boltId}&locationId=${s.mainId}&type=sales_fulfillment`)).body.data;
  t.like(moved, [{ quantity: -3, source: { type: 'sales_fulfillment', id: fulfillment.id } }]);
  t.deepEqual(await eventsOf(h, s.accountId, 'sales_order.partially_fulfilled'), [partial]);

  // The rest, from the other warehouse, without naming lines: everything the order has left.
  const rest = await ship(s, order.id, { locationId: s.backId });

  t.is(rest.status, 201);
  t.deepEqual(rest.body.lines, [{ lineItemId: bolt, itemId: s.boltId, quantity: 2 }, { lineItemId: nut, itemId: s.nutId, quantity: 2 }]);
  const done = rest.body.salesOrder;
  t.like(done, { status: 'fulfilled', fulfilledLocationId: null }, 'shipped from two locations: see fulfillments');
  t.deepEqual(done.lineItems.map((line: { quantityFulfilled: number }) => line.quantityFulfilled), [5, 2]);
  t.deepEqual(done.fulfillments.map((f: { locationId: string }) => f.locationId), [s.mainId, s.backId]);
  t.deepEqual(await levelOf(s, s.boltId, s.backId), { quantity: 8, reserved: 0, available: 8, incoming: 0, oversold: false });
  t.deepEqual(await eventsOf(h, s.accountId, 'sales_order.fulfilled'), [done]);
  t.is((await eventsOf(h, s.accountId, 'sales_order.partially_fulfilled')).length, 1, 'the completing fulfilment records fulfilled only');

  const listed = await s.api.get(`/sales-orders/${order.id}/fulfillments?limit=1`);
  t.deepEqual(listed.body.data, [fulfillment]);
  t.regex(listed.headers.get('link') ?? '', /rel="next"/);
  const next = await s.api.get(/<([^>]+)>/.exec(listed.headers.get('link')!)![1]!);
  t.deepEqual(next.body.data.map((f: { id: string }) => f.id), [rest.body.id]);
  t.is((await s.api.get('/sales-orders/00000000-0000-4000-8000-000000000000/fulfillments')).status, 404);

  const refused = await ship(s, order.id, { locationId: s.mainId });
  t.deepEqual(refused.body, { error: 'Cannot ship a sales order that is fulfilled', status: 'fulfilled', operation: 'ship' });
  await consistent(t, h, s.accountId);
});

test('one location throughout: fulfilledLocationId names it once the order is complete; fulfill ships what is left', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  await stock(s, s.nutId, 10);
  const { order, nut } = await orderOf(s);

  t.is((await ship(s, order.id, { locationId: s.mainId, lines: [{ lineItemId: nut, quantity: 0.5 }] })).status, 201);
  const rest = await s.api.post(`/sales-orders/${order.id}/fulfill`, { locationId: s.mainId });

  t.is(rest.status, 200);
  t.like(rest.body, { status: 'fulfilled', fulfilledLocationId: s.mainId });
  t.deepEqual(rest.body.fulfillments.map((f: { lines: Array<{ quantity: number }> }) => f.lines.map((line) => line.quantity)), [[0.5], [5, 1.5]]);
  t.deepEqual([(await levelOf(s, s.boltId)).quantity, (await levelOf(s, s.nutId)).quantity], [5, 8]);
  await consistent(t, h, s.accountId);
});

test('asking a line for more than it has left is a 409 naming each such line and its remainder; nothing is written', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  await stock(s, s.nutId, 10);
  const { order, bolt, nut } = await orderOf(s);
  await ship(s, order.id, { locationId: s.mainId, lines: [{ lineItemId: bolt, quantity: 4 }] });
  const before = await footprint(h.db, s.accountId, TABLES);

  const one = await ship(s, order.id, { locationId: s.mainId, lines: [{ lineItemId: bolt, quantity: 1.5 }] });
  const both = await ship(s, order.id, { locationId: s.mainId, lines: [{ lineItemId: nut, quantity: 3 }, { lineItemId: bolt, quantity: 2 }] });

  t.is(one.status, 409);
  t.deepEqual(one.body, {
    error: `Line ${bolt} has 1 left to fulfil, 1.5 asked: nothing was changed`,
    remainders: [{ lineItemId: bolt, itemId: s.boltId, requested: 1.5, remaining: 1 }],
  });
  t.is(both.status, 409);
  t.deepEqual(both.body.remainders, [
    { lineItemId: nut, itemId: s.nutId, requested: 3, remaining: 2 },
    { lineItemId: bolt, itemId: s.boltId, requested: 2, remaining: 1 },
  ]);
  t.deepEqual(await footprint(h.db, s.accountId, TABLES), before);
  t.is((await s.api.get(`/sales-orders/${order.id}`)).body.status, 'partially_fulfilled');
});

test('bad fulfilment bodies are 400s naming every problem; a short location is a 409 naming every short line', async (t) => {
  const s = await warehouse(h);
  const other = await warehouse(h);
  await stock(s, s.boltId, 1);
  const { order, bolt, nut } = await orderOf(s);
  const { order: foreign } = await orderOf(other);
  const before = await footprint(h.db, s.accountId, TABLES);

  const bad = await ship(s, order.id, { locationId: 'nowhere', lines: [{ lineItemId: bolt, quantity: 0 }, { quantity: 1 }], note: 'x' });
  t.is(bad.status, 400);
  t.deepEqual(bad.body.errors.map((e: { path: string }) => e.path).sort(), ['lines[0].quantity', 'lines[1].lineItemId', 'locationId', 'note']);
  t.deepEqual((await ship(s, order.id, { locationId: s.mainId, lines: [] })).body.errors.map((e: { path: string }) => e.path), ['lines']);

  const lines = await ship(s, order.id, {
    locationId: s.mainId,
    lines: [{ lineItemId: bolt, quantity: 1 }, { lineItemId: foreign.lineItems[0].id, quantity: 1 }, { lineItemId: bolt, quantity: 1 }],
  });
  t.is(lines.status, 400);
  t.deepEqual(lines.body.errors, [
    { path: 'lines[1].lineItemId', message: 'is not a line of this order' },
    { path: 'lines[2].lineItemId', message: 'names the same line as lines[0]: send each line once' },
  ]);

  const short = await ship(s, order.id, { locationId: s.mainId, lines: [{ lineItemId: bolt, quantity: 2 }, { lineItemId: nut, quantity: 1 }] });
  t.is(short.status, 409);
  t.deepEqual(short.body.shortages.map((x: { itemId: string; available: number }) => [x.itemId, x.available]).sort(), [[s.boltId, 1], [s.nutId, 0]].sort());
  t.is((await ship(other, order.id, { locationId: other.mainId })).status, 404, 'another account\'s order');
  t.deepEqual(await footprint(h.db, s.accountId, TABLES), before);
});

test('reservations: a fulfilment consumes what the line holds where it ships from; a line holds no more than it still needs', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  await stock(s, s.nutId, 10);
  await stock(s, s.boltId, 10, s.backId);
  const { order, bolt } = await orderOf(s, { locationId: s.mainId });
  t.deepEqual(await levelOf(s, s.boltId), { quantity: 10, reserved: 5, available: 5, incoming: 0, oversold: false });

  // 2 from MAIN: 2 of the 5 reserved there are consumed, 3 stay reserved.
  const first = await ship(s, order.id, { locationId: s.mainId, lines: [{ lineItemId: bolt, quantity: 2 }] });
  t.deepEqual(first.body.salesOrder.lineItems.map((line: { quantityReserved: number }) => line.quantityReserved), [3, 2]);
  t.deepEqual(await levelOf(s, s.boltId), { quantity: 8, reserved: 3, available: 5, incoming: 0, oversold: false });

  // 2 more from BACK (nothing reserved there): the line needs 1 more, so 2 of the 3 held at MAIN are released.
  const second = await ship(s, order.id, { locationId: s.backId, lines: [{ lineItemId: bolt, quantity: 2 }] });
  t.deepEqual(second.body.salesOrder.lineItems.map((line: { quantityReserved: number }) => line.quantityReserved), [1, 2]);
  t.deepEqual(await levelOf(s, s.boltId), { quantity: 8, reserved: 1, available: 7, incoming: 0, oversold: false });
  t.deepEqual(await levelOf(s, s.boltId, s.backId), { quantity: 8, reserved: 0, available: 8, incoming: 0, oversold: false });

  const released = await eventsOf(h, s.accountId, 'reservation.released');
  t.deepEqual(released.map((r) => [r.status, r.reason, r.quantity]), [['consumed', 'fulfilled', 2], ['released', 'completed', 2]]);
  t.is((await s.api.get(`/reservations?salesOrderId=${order.id}&status=open`)).body.data.length, 2, 'the 1 bolt and the 2 nuts still held');

  // Reserving again asks only for what lines still need and do not hold: nothing here.
  const reserved = await s.api.post(`/sales-orders/${order.id}/reserve`, { locationId: s.backId });
  t.like(reserved.body, { status: 'partially_fulfilled' });
  t.deepEqual(reserved.body.lineItems.map((line: { quantityReserved: number }) => line.quantityReserved), [1, 2]);
  await consistent(t, h, s.accountId);
});

test('cancelling a partially fulfilled order cancels the remainder: what shipped stays shipped, what was held is released', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  await stock(s, s.nutId, 10);
  const { order, bolt } = await orderOf(s, { locationId: s.mainId });
  await ship(s, order.id, { locationId: s.mainId, lines: [{ lineItemId: bolt, quantity: 3 }] });

  const cancelled = await s.api.post(`/sales-orders/${order.id}/cancel`);

  t.is(cancelled.status, 200);
  t.like(cancelled.body, { status: 'cancelled' });
  t.deepEqual(cancelled.body.lineItems.map((line: { quantityFulfilled: number; quantityReserved: number }) => [line.quantityFulfilled, line.quantityReserved]), [[3, 0], [0, 0]]);
  t.deepEqual(await levelOf(s, s.boltId), { quantity: 7, reserved: 0, available: 7, incoming: 0, oversold: false });
  t.deepEqual(await levelOf(s, s.nutId), { quantity: 10, reserved: 0, available: 10, incoming: 0, oversold: false });
  t.deepEqual((await ship(s, order.id, { locationId: s.mainId })).body, { error: 'Cannot ship a sales order that is cancelled', status: 'cancelled', operation: 'ship' });
  t.is((await s.api.post(`/sales-orders/${order.id}/fulfill`, { locationId: s.mainId })).status, 409);
  await consistent(t, h, s.accountId);
});

test('race: two fulfilments of the same remainder from two locations: one ships it, the other is a 409; stock is taken once', async (t) => {
  const s = await warehouse(h);
  for (const locationId of [s.mainId, s.backId]) {
    await stock(s, s.boltId, 100, locationId);
    await stock(s, s.nutId, 100, locationId);
  }
  const orders = await Promise.all(Array.from({ length: 8 }, () => orderOf(s)));

  const results = await Promise.all(orders.map(({ order, bolt }) => Promise.all([
    ship(s, order.id, { locationId: s.mainId, lines: [{ lineItemId: bolt, quantity: 5 }] }),
    ship(s, order.id, { locationId: s.backId, lines: [{ lineItemId: bolt, quantity: 5 }] }),
  ])));

  for (const pair of results) {
    t.deepEqual(pair.map((r) => r.status).sort(), [201, 409]);
    t.like(pair.find((r) => r.status === 409)!.body, { remainders: [{ requested: 5, remaining: 0 }] });
  }
  const shipped = (await levelOf(s, s.boltId)).quantity + (await levelOf(s, s.boltId, s.backId)).quantity;
  t.is(shipped, 200 - 5 * orders.length, 'each order\'s bolts shipped once');
  await consistent(t, h, s.accountId);
});

test('race: a cancel and a fulfilment of one reserved order: one consistent end, and the ledger, reservations and lines agree', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 100);
  await stock(s, s.nutId, 100);
  const orders = await Promise.all(Array.from({ length: 8 }, () => orderOf(s, { locationId: s.mainId })));

  const results = await Promise.all(orders.map(({ order, bolt }) => Promise.all([
    ship(s, order.id, { locationId: s.mainId, lines: [{ lineItemId: bolt, quantity: 2 }] }),
    s.api.post(`/sales-orders/${order.id}/cancel`),
  ])));

  for (const [[shipped, cancel], { order }] of results.map((pair, i) => [pair, orders[i]!] as const)) {
    t.is(cancel.status, 200, `cancel is allowed before and after a partial fulfilment: ${JSON.stringify(cancel.body)}`);
    const final = (await s.api.get(`/sales-orders/${order.id}`)).body;
    t.is(final.status, 'cancelled');
    t.deepEqual(final.lineItems.map((line: { quantityReserved: number }) => line.quantityReserved), [0, 0]);
    t.is(final.lineItems[0].quantityFulfilled, shipped.status === 201 ? 2 : 0);
    if (shipped.status !== 201) t.like(shipped.body, { status: 'cancelled', operation: 'ship' });
  }
  t.like(await levelOf(s, s.boltId), { reserved: 0 });
  await consistent(t, h, s.accountId);
});

test.serial('a fulfilment is a read and one write; a reservation of the order changed meanwhile makes it read again', async (t) => {
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  await stock(s, s.nutId, 10);
  const { order } = await orderOf(s, { locationId: s.mainId });

  const sent = await statementsOf(async () => t.is((await s.api.post(`/sales-orders/${order.id}/fulfill`, { locationId: s.mainId })).status, 200));
  // The route first checks the location is the account's (its resolve).
  t.is(sent.length, 3, sent.join('\n---\n'));
  t.regex(sent[2]!, /stockroom_lock_levels[\s\S]*insert into stock_levels[\s\S]*for update[\s\S]*insert into sales_fulfillments[\s\S]*update sales_orders[\s\S]*insert into events/);

  // Another transaction holds one of the order's reservations while the fulfilment's write waits for it, then changes
  // it and commits: the order's own row did not change, but what it holds did, so the fulfilment runs again on it.
  const { order: second, bolt: secondBolt } = await orderOf(s, { locationId: s.mainId });
  const holder = await h.db.transaction();
  const held = await holder('reservations').where({ sales_order_line_id: secondBolt }).forUpdate().first();
  let shipping: ReturnType<typeof ship> | undefined;
  const statements = await statementsOf(async () => {
    shipping = ship(s, second.id, { locationId: s.mainId, lines: [{ lineItemId: secondBolt, quantity: 5 }] });
    t.true(await waitsForLock(h.db), 'the fulfilment waits for the reservation');
    await holder('reservations').where({ id: held.id }).update({ reference: 'Changed meanwhile', updated_at: h.db.fn.now() });
    await holder.commit();
    await shipping;
  });
  const shipped = await shipping!;
  t.is(shipped.status, 201, JSON.stringify(shipped.body));
  const kinds = statements.map((text) => (/update sales_orders/.test(text) ? 'write' : /as version/.test(text) ? 'read' : 'the test\'s'));
  t.deepEqual(kinds.filter((kind) => kind !== 'the test\'s'), ['read', 'write', 'read', 'write'], 'the first write stopped; the order was read again');
  t.deepEqual(shipped.body.salesOrder.lineItems.map((line: { quantityFulfilled: number; quantityReserved: number }) => [line.quantityFulfilled, line.quantityReserved]), [[5, 0], [0, 2]]);
  t.deepEqual((await s.api.get(`/sales-orders/${second.id}`)).body, shipped.body.salesOrder);
  t.like((await eventsOf(h, s.accountId, 'reservation.released')).at(-1), { id: held.id, status: 'consumed', reason: 'fulfilled', reference: 'Changed meanwhile' });
  t.deepEqual(await levelOf(s, s.boltId), { quantity: 0, reserved: 0, available: 0, incoming: 0, oversold: false });
  await consistent(t, h, s.accountId);
});

test('the OpenAPI document shows the fulfilment routes, the new status and event, with every answer', async (t) => {
  const doc = (await h.app.api().get('/openapi.json')).body;
  const create = doc.paths['/sales-orders/{id}/fulfillments'].post;
  t.truthy(create.responses['201']);
  t.truthy(create.responses['409']);
  t.regex(create.description, /`open` \(to `fulfilled` once every line is fulfilled, else `partially_fulfilled`\)/);
  t.truthy(doc.paths['/sales-orders/{id}/fulfillments'].get.responses['404']);
  t.true(doc.components.schemas.SalesOrder.properties.status.enum.includes('partially_fulfilled'));
  t.truthy(doc.webhooks['sales_order.partially_fulfilled']);
  t.truthy(doc.components.schemas.SalesOrderLine.properties.quantityFulfilled);
});

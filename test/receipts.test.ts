// Partial receiving: a purchase order received in deliveries, closed when complete or closed short.
import test from 'ava';
import { useHarness } from './helpers/harness.ts';
import { footprint } from './helpers/ledger.ts';
import { consistent, eventsOf, levelOf, warehouse, type Warehouse } from './helpers/warehouse.ts';

const h = useHarness(test);

const TABLES = ['purchase_orders', 'purchase_order_lines', 'purchase_receipts', 'purchase_receipt_lines', 'stock_levels', 'stock_movements', 'events'];

/** A confirmed order of 40 BOLT and 10 NUT into MAIN (lines in that order). */
async function confirmedOrder(s: Warehouse) {
  const { body } = await s.api.post('/purchase-orders', {
    supplierName: 'Acme Fasteners', locationId: s.mainId,
    lines: [{ itemId: s.boltId, quantity: 40, unitCost: 0.1 }, { itemId: s.nutId, quantity: 10, unitCost: 0.05 }],
  });
  await s.api.post(`/purchase-orders/${body.id}/confirm`);
  return { order: body, bolt: body.lines[0].id as string, nut: body.lines[1].id as string };
}

const receive = (s: Warehouse, orderId: string, body?: Record<string, unknown>) => s.api.post(`/purchase-orders/${orderId}/receipts`, body);

test('an order received in two deliveries: partially_received, then closed; incoming falls as goods arrive', async (t) => {
  const s = await warehouse(h);
  const { order, bolt, nut } = await confirmedOrder(s);
  t.like(await levelOf(s, s.boltId), { quantity: 0, incoming: 40 });

  const first = await receive(s, order.id, { lines: [{ lineId: bolt, quantity: 25 }], reference: 'DN-1001' });

  t.is(first.status, 201);
  const { purchaseOrder: partial, ...receipt } = first.body;
  t.deepEqual(receipt, {
    id: receipt.id, purchaseOrderId: order.id, locationId: s.mainId, reference: 'DN-1001',
    lines: [{ lineId: bolt, itemId: s.boltId, quantity: 25 }], createdBy: s.userId, createdAt: receipt.createdAt,
  });
  t.is(partial.status, 'partially_received');
  t.deepEqual(partial.lines.map((line: { quantityReceived: number }) => line.quantityReceived), [25, 0]);
  t.deepEqual(partial.receipts, [receipt]);
  t.deepEqual(await levelOf(s, s.boltId), { quantity: 25, reserved: 0, available: 25, incoming: 15, oversold: false });
  t.like(await levelOf(s, s.nutId), { quantity: 0, incoming: 10 });
  const moved = (await s.api.get(`/stock-movements?itemId=${s.boltId}&type=purchase_receipt`)).body.data;
  t.like(moved, [{ quantity: 25, locationId: s.mainId, source: { type: 'purchase_receipt', id: receipt.id } }]);
  t.deepEqual(await eventsOf(h, s.accountId, 'purchase_order.partially_received'), [partial]);

  // The second delivery: everything outstanding, without naming lines.
  const second = await receive(s, order.id);

  t.is(second.status, 201);
  t.deepEqual(second.body.lines, [{ lineId: bolt, itemId: s.boltId, quantity: 15 }, { lineId: nut, itemId: s.nutId, quantity: 10 }]);
  const closed = second.body.purchaseOrder;
  t.is(closed.status, 'closed');
  t.deepEqual(closed.lines.map((line: { quantityReceived: number }) => line.quantityReceived), [40, 10]);
  t.deepEqual(await levelOf(s, s.boltId), { quantity: 40, reserved: 0, available: 40, incoming: 0, oversold: false });
  t.like(await levelOf(s, s.nutId), { quantity: 10, incoming: 0 });
  t.deepEqual(await eventsOf(h, s.accountId, 'purchase_order.closed'), [closed]);
  t.deepEqual((await s.api.get(`/purchase-orders/${order.id}/receipts`)).body.data.map((r: { id: string }) => r.id), [receipt.id, second.body.id]);
  t.deepEqual((await s.api.get(`/purchase-orders/${order.id}`)).body, closed);
  t.deepEqual((await receive(s, order.id)).body, { error: 'Cannot receive a purchase order that is closed', status: 'closed', operation: 'receive' });
  await consistent(t, h, s.accountId);
});

test('hold and confirm from partially_received return to it; close receives what is outstanding', async (t) => {
  const s = await warehouse(h);
  const { order, nut } = await confirmedOrder(s);
  await receive(s, order.id, { lines: [{ lineId: nut, quantity: 4 }] });

  const held = await s.api.post(`/purchase-orders/${order.id}/hold`);
  t.is(held.body.status, 'on_hold');
  t.like(await levelOf(s, s.nutId), { quantity: 4, incoming: 6 }, 'still expected while on hold');
  t.is((await receive(s, order.id)).status, 409, 'nothing is received on hold');
  const confirmed = await s.api.post(`/purchase-orders/${order.id}/confirm`);
  t.is(confirmed.body.status, 'partially_received');

  const closed = await s.api.post(`/purchase-orders/${order.id}/close`);

  t.is(closed.status, 200);
  t.is(closed.body.status, 'closed');
  t.deepEqual(closed.body.receipts.map((r: { lines: Array<{ quantity: number }> }) => r.lines.map((line) => line.quantity)), [[4], [40, 6]]);
  t.like(await levelOf(s, s.nutId), { quantity: 10, incoming: 0 });
  t.like(await levelOf(s, s.boltId), { quantity: 40, incoming: 0 });
  await consistent(t, h, s.accountId);
});

test('close {"receiveOutstanding": false} closes short; cancel keeps what was received; neither receives more', async (t) => {
  const s = await warehouse(h);
  const short = await confirmedOrder(s);
  await receive(s, short.order.id, { lines: [{ lineId: short.bolt, quantity: 30 }] });
  const cancelled = await confirmedOrder(s);
  await receive(s, cancelled.order.id, { lines: [{ lineId: cancelled.nut, quantity: 2 }] });

  const closed = await s.api.post(`/purchase-orders/${short.order.id}/close`, { receiveOutstanding: false });
  const cancel = await s.api.post(`/purchase-orders/${cancelled.order.id}/cancel`);

  t.like(closed.body, { status: 'closed' });
  t.is(closed.body.receipts.length, 1, 'no receipt for what never came');
  t.deepEqual(closed.body.lines.map((line: { quantityReceived: number }) => line.quantityReceived), [30, 0]);
  t.like(cancel.body, { status: 'cancelled' });
  t.deepEqual(await levelOf(s, s.boltId), { quantity: 30, reserved: 0, available: 30, incoming: 0, oversold: false });
  t.deepEqual(await levelOf(s, s.nutId), { quantity: 2, reserved: 0, available: 2, incoming: 0, oversold: false });
  const bad = await s.api.post(`/purchase-orders/${short.order.id}/close`, { receiveOutstanding: 'no', extra: 1 });
  t.deepEqual(bad.body.errors.map((e: { path: string }) => e.path).sort(), ['extra', 'receiveOutstanding']);
  await consistent(t, h, s.accountId);
});

test('over-receipt is a 409 naming each line and what it has outstanding; bad lines are 400s; drafts receive nothing', async (t) => {
  const s = await warehouse(h);
  const { order, bolt, nut } = await confirmedOrder(s);
  await receive(s, order.id, { lines: [{ lineId: nut, quantity: 9.5 }] });
  const { body: draft } = await s.api.post('/purchase-orders', { supplierName: 'Later', locationId: s.mainId, lines: [{ itemId: s.boltId, quantity: 1, unitCost: 1 }] });
  const before = await footprint(h.db, s.accountId, TABLES);

  const over = await receive(s, order.id, { lines: [{ lineId: bolt, quantity: 40 }, { lineId: nut, quantity: 1 }] });
  t.is(over.status, 409);
  t.deepEqual(over.body, {
    error: `Line ${nut} has 0.5 left to receive, 1 asked: nothing was changed`,
    remainders: [{ lineId: nut, itemId: s.nutId, requested: 1, remaining: 0.5 }],
  });
  const duplicate = await receive(s, order.id, { lines: [{ lineId: bolt, quantity: 1 }, { lineId: bolt, quantity: 1 }, { lineId: draft.lines[0].id, quantity: 1 }] });
  t.deepEqual(duplicate.body.errors, [
    { path: 'lines[1].lineId', message: 'names the same line as lines[0]: send each line once' },
    { path: 'lines[2].lineId', message: 'is not a line of this order' },
  ]);
  t.deepEqual((await receive(s, order.id, { lines: [{ lineId: 'x', quantity: -1 }] })).body.errors.map((e: { path: string }) => e.path).sort(),
    ['lines[0].lineId', 'lines[0].quantity']);
  t.deepEqual((await receive(s, draft.id)).body, { error: 'Cannot receive a purchase order that is draft', status: 'draft', operation: 'receive' });
  t.is((await receive(s, '00000000-0000-4000-8000-000000000000')).status, 404);
  t.deepEqual(await footprint(h.db, s.accountId, TABLES), before);
});

test('race: two receipts of the same outstanding quantity: one 201, one 409, the goods received once', async (t) => {
  const s = await warehouse(h);
  const orders = await Promise.all(Array.from({ length: 8 }, () => confirmedOrder(s)));

  const results = await Promise.all(orders.map(({ order, bolt }) => Promise.all([
    receive(s, order.id, { lines: [{ lineId: bolt, quantity: 40 }] }),
    receive(s, order.id, { lines: [{ lineId: bolt, quantity: 40 }] }),
  ])));

  for (const pair of results) {
    t.deepEqual(pair.map((r) => r.status).sort(), [201, 409]);
    t.like(pair.find((r) => r.status === 409)!.body, { remainders: [{ requested: 40, remaining: 0 }] });
  }
  t.deepEqual(await levelOf(s, s.boltId), { quantity: 40 * orders.length, reserved: 0, available: 40 * orders.length, incoming: 0, oversold: false });
  t.like(await levelOf(s, s.nutId), { incoming: 10 * orders.length });
  await consistent(t, h, s.accountId);
});

test('the OpenAPI document shows receipts, the new status and event', async (t) => {
  const doc = (await h.app.api().get('/openapi.json')).body;
  const create = doc.paths['/purchase-orders/{id}/receipts'].post;
  t.truthy(create.responses['201']);
  t.false(create.requestBody.required, 'no body receives everything outstanding');
  t.truthy(doc.paths['/purchase-orders/{id}/receipts'].get);
  t.true(doc.components.schemas.PurchaseOrder.properties.status.enum.includes('partially_received'));
  t.truthy(doc.webhooks['purchase_order.partially_received']);
  t.truthy(doc.components.schemas.ClosePurchaseOrder);
});

// Fulfilments and receipts: orders taken in one go before they existed gain one record each (migration 012), and
// `npm run check:consistency` proves every line's taken quantity against its parts and their movements. A file of
// its own, serial: the migration is run down and up again on this file's database, and the damage below must be the
// only damage the check finds.
import test from 'ava';
import * as partialFlows from '../db/migrations/012_partial_flows.ts';
import { runConsistencyCheck } from './helpers/consistency.ts';
import { useHarness } from './helpers/harness.ts';
import { stock, warehouse } from './helpers/warehouse.ts';

const h = useHarness(test);
const runCheck = () => runConsistencyCheck(h.databaseUrl);

test.serial('orders fulfilled or closed in one go before migration 012 each gain one record of everything; their movements keep naming the order', async (t) => {
  // Setup: an open sales order and a confirmed purchase order, taken in one go as the code before 012 did it.
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  const order = (await s.api.post('/sales-orders', { customerId: s.customerId, lineItems: [{ itemId: s.boltId, quantity: 3 }] })).body;
  const purchase = (await s.api.post('/purchase-orders', { supplierName: 'Acme', locationId: s.mainId, lines: [{ itemId: s.nutId, quantity: 5, unitCost: 1 }] })).body;
  await s.api.post(`/purchase-orders/${purchase.id}/confirm`);
  await h.db.transaction(async (trx) => {
    await partialFlows.down(trx);
    const moved = (itemId: string, quantity: number, type: string, sourceType: string, sourceId: string) => trx('stock_movements').insert({
      account_id: s.accountId, item_id: itemId, location_id: s.mainId, quantity, type, reason: 'before 012', source_type: sourceType,
      source_id: sourceId, created_by: s.userId,
    });
    await trx('sales_orders').where({ id: order.id }).update({ status: 'fulfilled', fulfilled_location_id: s.mainId });
    await moved(s.boltId, -3, 'sales_fulfillment', 'sales_order', order.id);
    await trx('stock_levels').where({ item_id: s.boltId, location_id: s.mainId }).update({ quantity: 7 });
    await trx('purchase_orders').where({ id: purchase.id }).update({ status: 'closed', closed_at: trx.fn.now() });
    await moved(s.nutId, 5, 'purchase_receipt', 'purchase_order', purchase.id);
    await trx('stock_levels').where({ item_id: s.nutId, location_id: s.mainId }).update({ quantity: 5, incoming: 0 });
  });

  // Action
  await h.db.transaction((trx) => partialFlows.up(trx));

  // Assertions
  const fulfilled = (await s.api.get(`/sales-orders/${order.id}`)).body;
  t.like(fulfilled, { status: 'fulfilled', fulfilledLocationId: s.mainId });
  t.is(fulfilled.lineItems[0].quantityFulfilled, 3);
  t.like(fulfilled.fulfillments, [{ locationId: s.mainId, createdBy: s.userId, lines: [{ lineItemId: order.lineItems[0].id, itemId: s.boltId, quantity: 3 }] }]);
  const closed = (await s.api.get(`/purchase-orders/${purchase.id}`)).body;
  t.is(closed.lines[0].quantityReceived, 5);
  t.like(closed.receipts, [{ locationId: s.mainId, lines: [{ lineId: purchase.lines[0].id, itemId: s.nutId, quantity: 5 }] }]);
  t.like((await s.api.get(`/stock-movements?itemId=${s.nutId}`)).body.data, [{ source: { type: 'purchase_order', id: purchase.id } }]);
  const check = await runCheck();
  t.is(check.code, 0, check.output);
});

test.serial('every line\'s fulfilled and received quantities are proven against their parts, their movements and the order\'s status', async (t) => {
  // Setup: an order shipped in part with a line still reserved, and a purchase order received in part.
  const s = await warehouse(h);
  await stock(s, s.boltId, 10);
  await stock(s, s.nutId, 10);
  const order = (await s.api.post('/sales-orders', {
    customerId: s.customerId, locationId: s.mainId, lineItems: [{ itemId: s.boltId, quantity: 4 }, { itemId: s.nutId, quantity: 2 }],
  })).body;
  const [bolt, nut] = order.lineItems.map((line: { id: string }) => line.id);
  await s.api.post(`/sales-orders/${order.id}/fulfillments`, { locationId: s.mainId, lines: [{ lineItemId: bolt, quantity: 1 }] });
  const purchase = (await s.api.post('/purchase-orders', { supplierName: 'Acme', locationId: s.mainId, lines: [{ itemId: s.nutId, quantity: 5, unitCost: 1 }] })).body;
  await s.api.post(`/purchase-orders/${purchase.id}/confirm`);
  const receipt = (await s.api.post(`/purchase-orders/${purchase.id}/receipts`, { lines: [{ lineId: purchase.lines[0].id, quantity: 2 }] })).body;
  const clean = await runCheck();
  t.is(clean.code, 0, clean.output);
  t.regex(clean.output, /checked fulfilments and receipts/);

  // Action: a line's fulfilled quantity drifts from its parts and its movements; a receipt's line from its
  // movement; the lines claim more than was shipped, so they hold more than they need; a purchase order that received
  // part of its goods says it is only confirmed.
  await h.db('sales_order_lines').where({ id: bolt }).update({ quantity_fulfilled: 2 });
  await h.db('purchase_receipt_lines').where({ receipt_id: receipt.id }).update({ quantity: 3 });
  await h.db('purchase_order_lines').where({ id: purchase.lines[0].id }).update({ quantity_received: 3 });
  await h.db('purchase_orders').where({ id: purchase.id }).update({ status: 'confirmed' });
  await h.db('sales_order_lines').where({ id: nut }).update({ quantity_fulfilled: 1 });
  await h.db('sales_fulfillment_lines').insert({
    account_id: s.accountId, fulfillment_id: (await h.db('sales_fulfillments').where({ sales_order_id: order.id }).first()).id,
    position: 1, sales_order_line_id: nut, item_id: s.nutId, quantity: 1,
  });

  // Assertions
  const damaged = await runCheck();
  t.is(damaged.code, 1, damaged.output);
  t.regex(damaged.output, new RegExp(`line ${bolt} of sales order ${order.id} has 2 taken, its parts sum to 1`));
  t.regex(damaged.output, new RegExp(`sales order ${order.id} has 2 of item ${s.boltId} taken by its lines, its movements say 1`));
  t.regex(damaged.output, new RegExp(`sales order ${order.id} has 1 of item ${s.nutId} taken by its lines, its movements say 0`));
  t.regex(damaged.output, new RegExp(`line ${nut} of sales order ${order.id} holds 2 in open reservations but needs only 1`));
  t.regex(damaged.output, new RegExp(`purchase order ${purchase.id} has 3 of item ${s.nutId} taken by its lines, its movements say 2`));
  t.regex(damaged.output, new RegExp(`item ${s.nutId} at location ${s.mainId} .* has 3 incoming, its expected purchase orders still bring 2`));
  t.regex(damaged.output, new RegExp(`line ${bolt} of sales order ${order.id} holds 3 in open reservations but needs only 2`));
  t.regex(damaged.output, new RegExp(`purchase order ${purchase.id} is confirmed, which its lines contradict`));
  t.regex(damaged.output, /8 problem\(s\)/);
});

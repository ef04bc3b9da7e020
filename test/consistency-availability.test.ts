// `npm run check:consistency` proves what levels keep beside what is on hand: reserved and incoming. A file of its own:
// the damage below must be the only damage the check finds.
import test from 'ava';
import { runConsistencyCheck } from './helpers/consistency.ts';
import { useHarness } from './helpers/harness.ts';
import { expiryJobKey } from '../shared/stock.ts';

const h = useHarness(test);
const runCheck = () => runConsistencyCheck(h.databaseUrl);

test.serial('reserved and incoming are proven against the reservations and purchase orders: each kind of drift is named', async (t) => {
  // Setup: a hold, a reserved order and a confirmed purchase order, all through the API.
  const app = await h.startApp();
  const account = await h.newAccount();
  const api = app.api(account.key);
  const itemId = (await api.post('/items', { sku: 'HELD', name: 'Held item', price: 1 })).body.id;
  const locationId = (await api.post('/locations', { name: 'Shelf' })).body.id;
  const customerId = (await api.post('/customers', { name: 'Ada' })).body.id;
  await api.post('/stock-adjustments', { itemId, locationId, quantity: 10, reason: 'count' });
  const hold = (await api.post('/reservations', { itemId, locationId, quantity: 2, expiresAt: new Date(Date.now() + 3_600_000).toISOString() })).body;
  const order = (await api.post('/sales-orders', { customerId, locationId, lineItems: [{ itemId, quantity: 3 }] })).body;
  const purchase = (await api.post('/purchase-orders', { supplierName: 'Acme', locationId, lines: [{ itemId, quantity: 7, unitCost: 1 }] })).body;
  await api.post(`/purchase-orders/${purchase.id}/confirm`);
  const clean = await runCheck();
  t.is(clean.code, 0, clean.output);
  t.regex(clean.output, /checked reservations: 2 open/);

  // Action: reserved and incoming drift from their rows; a hold past its expiry with no job; an open reservation
  // of an order that is no longer open.
  await h.db('stock_levels').where({ item_id: itemId, location_id: locationId }).update({ reserved: 4, incoming: 0 });
  await h.db('reservations').where({ id: hold.id }).update({ expires_at: h.db.raw("now() - interval '2 minutes'") });
  await h.db.raw('select graphile_worker.remove_job(?)', [expiryJobKey(hold.id)]);
  await h.db('sales_orders').where({ id: order.id }).update({ status: 'cancelled' });

  // Assertions
  const damaged = await runCheck();
  t.is(damaged.code, 1, damaged.output);
  t.regex(damaged.output, /4 problem\(s\)/);
  t.regex(damaged.output, new RegExp(`item ${itemId} at location ${locationId} .* has 4 reserved, its open reservations hold 5`));
  t.regex(damaged.output, new RegExp(`item ${itemId} at location ${locationId} .* has 0 incoming, its expected purchase orders still bring 7`));
  t.regex(damaged.output, new RegExp(`reservation ${hold.id} expired at .* and is still open, with no job to release it`));
  t.regex(damaged.output, new RegExp(`reservation [0-9a-f-]+ is open for sales order ${order.id}, which is cancelled`));
});

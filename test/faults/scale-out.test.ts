// Two web processes and two workers on one database under a mixed load, three subscriptions on local receivers:
// every event reaches every subscriber that wanted it exactly once, levels equal the sum of movements, no order
// number or sku is duplicated, and the consistency check passes.
import test from 'ava';
import { client, type Client } from '../helpers/client.ts';
import { eventually } from '../helpers/eventually.ts';
import { useHarness } from '../helpers/harness.ts';
import { ledgerMismatches } from '../helpers/ledger.ts';
import { baseUrlOf, load, localReceiver, runConsistencyCheck, sleep, startWeb, startWorkerProcess } from './support.ts';

const h = useHarness(test);
const LOAD_MS = 8000;

const pick = <T>(values: T[]): T => values[Math.floor(Math.random() * values.length)]!;

test('2 web + 2 worker processes under mixed load: exactly-once acknowledgements, exact ledger, no duplicates', async (t) => {
  // Setup: the processes, three receivers and their subscriptions, items with stock at two locations.
  const webs = await Promise.all([startWeb(h.databaseUrl), startWeb(h.databaseUrl)]);
  const workers = await Promise.all([startWorkerProcess(h.databaseUrl), startWorkerProcess(h.databaseUrl)]);
  t.teardown(() => { for (const p of [...webs, ...workers]) p.child.kill('SIGKILL'); });
  const account = await h.newAccount();
  const apis: Client[] = webs.map((web) => client(baseUrlOf(web), account.key));
  const receivers = await Promise.all([localReceiver(), localReceiver(), localReceiver()]);
  t.teardown(() => { for (const r of receivers) r.close(); });
  const subscriptions = [['*'], ['*'], ['stock.adjusted', 'sales_order.created']];
  for (const [i, events] of subscriptions.entries()) {
    t.is((await apis[i % 2]!.post('/webhooks', { url: receivers[i]!.url, events })).status, 201);
  }
  const items: Array<{ id: string; sku: string }> = [];
  for (let i = 0; i < 6; i += 1) items.push((await apis[0]!.post('/items', { sku: `BASE-${i}`, name: `Item ${i}`, price: 2 })).body);
  const locations: string[] = [];
  for (const name of ['North', 'South']) locations.push((await apis[1]!.post('/locations', { name })).body.id);
  const customerId = (await apis[0]!.post('/customers', { name: 'Scale-out customer' })).body.id;
  for (const item of items) {
    for (const locationId of locations) await apis[0]!.post('/stock-adjustments', { itemId: item.id, locationId, quantity: 50, reason: 'opening' });
  }

  // Action: 12 loops (6 per web process) of adjustments, transfers, sales orders (both shapes, fulfilled),
  // purchase orders (confirmed and closed) and item creates that collide on purpose.
  const operations = [
    (api: Client) => api.post('/stock-adjustments', { itemId: pick(items).id, locationId: pick(locations), quantity: pick([-3, -1, 2, 5]), reason: 'count' }),
    (api: Client) => {
      const [from, to] = Math.random() < 0.5 ? locations : [...locations].reverse();
      return api.post('/stock-transfers', { itemId: pick(items).id, fromLocationId: from, toLocationId: to, quantity: 2, reason: 'rebalance' });
    },
    async (api: Client) => {
      const order = await api.post('/sales-orders', { customerId, lineItems: [{ itemId: pick(items).id, quantity: 1 }, { itemId: pick(items).id, quantity: 2 }] });
      return order.status === 201 ? api.post(`/sales-orders/${order.body.id}/fulfill`, { locationId: pick(locations) }) : order;
    },
    (api: Client) => api.post('/sales-orders', {
      salesOrderNumber: `EXT-${Math.floor(Math.random() * 40)}`, customerId, items: [{ sku: pick(items).sku, quantity: 1, price: 3 }],
    }),
    async (api: Client) => {
      const order = await api.post('/purchase-orders', { supplierName: 'Acme', locationId: pick(locations), lines: [{ itemId: pick(items).id, quantity: 10, unitCost: 1 }] });
      if (order.status !== 201) return order;
      const confirmed = await api.post(`/purchase-orders/${order.body.id}/confirm`);
      return confirmed.status === 200 ? api.post(`/purchase-orders/${order.body.id}/close`) : confirmed;
    },
    (api: Client) => api.post('/items', { sku: `NEW-${Math.floor(Math.random() * 60)}`, name: 'Created under load' }),
  ];
  const statuses = new Map<number, number>();
  const perWeb = [0, 0];
  const results = await load(12, sleep(LOAD_MS), async (n) => {
    const { status } = await pick(operations)(apis[n % 2]!);
    perWeb[n % 2]! += 1;
    statuses.set(status, (statuses.get(status) ?? 0) + 1);
    return status;
  });
  const loadEnded = performance.now();

  // Every event acknowledged by every subscription that wanted it, and nothing left to run.
  const pending = async () => {
    const { rows } = await h.db.raw(`select
      (select count(*) from graphile_worker.jobs) as jobs,
      (select count(*) from webhook_dispatches where acknowledged_at is null) as unacknowledged`);
    return Number(rows[0].jobs) + Number(rows[0].unacknowledged);
  };
  t.true(await eventually(async () => (await pending()) === 0, 120_000), 'every delivery done');
  const drainedMs = performance.now() - loadEnded;

  // Assertions
  t.deepEqual([...statuses.keys()].filter((s) => ![200, 201, 409].includes(s)), [], `statuses: ${JSON.stringify([...statuses])}`);
  const events = await h.db('events').where({ account_id: account.accountId }).select('id', 'type');
  for (const [i, wanted] of subscriptions.entries()) {
    const expected = events.filter((e) => wanted.includes('*') || wanted.includes(e.type)).map((e) => e.id as string).sort();
    const receiver = receivers[i]!;
    t.deepEqual([...receiver.acknowledged.keys()].sort(), expected, `receiver ${i} acknowledged every event it wanted`);
    t.deepEqual([...receiver.arrivals.values()].filter((n) => n !== 1), [], `receiver ${i} got each event exactly once`);
  }
  t.deepEqual(await ledgerMismatches(h.db, account.accountId), []);
  const duplicates = await h.db.raw(`
    select 'sku' as what, sku as value from items where account_id = ? group by sku having count(*) > 1
    union all
    select 'salesOrderNumber', sales_order_number from sales_orders where account_id = ? group by sales_order_number having count(*) > 1`,
  [account.accountId, account.accountId]);
  t.deepEqual(duplicates.rows, []);
  const check = await runConsistencyCheck(h.databaseUrl);
  t.is(check.code, 0, check.output);
  t.log(`${results.length} requests (${perWeb.join(' + ')} per web process; ${JSON.stringify(Object.fromEntries(statuses))}); ` +
    `${events.length} events, ${receivers.reduce((sum, r) => sum + r.acknowledged.size, 0)} deliveries, ` +
    `all acknowledged ${Math.round(drainedMs)} ms after the load ended`);
  t.log(check.output.trim());
});

// `npm run check:consistency`: passes on data the API and the worker wrote, and names every kind of damage.
import test from 'ava';
import nock from 'nock';
import { startWorker, type Worker } from '../jobs/worker.ts';
import { createLogger } from '../shared/logger.ts';
import type { ResolveHost } from '../shared/webhook-urls.ts';
import { runConsistencyCheck } from './helpers/consistency.ts';
import { testConfig, useHarness } from './helpers/harness.ts';
import { eventually, receiver } from './helpers/receiver.ts';
import { dispatchJobKey } from '../shared/events.ts';

const h = useHarness(test);
const publicAddress: ResolveHost = async () => ['93.184.216.34'];

let worker: Worker | undefined;
test.after.always(async () => {
  await worker?.stop();
  nock.cleanAll();
});

const runCheck = () => runConsistencyCheck(h.databaseUrl);

test.serial('what the API and the worker wrote is consistent; each kind of damage is named', async (t) => {
  // Setup: stock moved through the API, two subscriptions, every event delivered.
  const app = await h.startApp({}, { resolveHost: publicAddress });
  const account = await h.newAccount();
  const api = app.api(account.key);
  const hooks = [receiver(), receiver()];
  const webhookIds: string[] = [];
  for (const hook of hooks) webhookIds.push((await api.post('/webhooks', { url: hook.url, events: ['*'] })).body.id);
  const itemId = (await api.post('/items', { sku: 'CHECKED', name: 'Checked item' })).body.id;
  const locationId = (await api.post('/locations', { name: 'Main' })).body.id;
  await api.post('/stock-adjustments', { itemId, locationId, quantity: 10, reason: 'count' });
  await api.post('/stock-adjustments', { itemId, locationId, quantity: -4, reason: 'damage' });
  worker = await startWorker(testConfig(), h.databaseUrl, createLogger('silent'), { resolveHost: publicAddress });
  for (const hook of hooks) await hook.waitFor(3);
  const acked = async () => Number((await h.db('webhook_dispatches').whereNotNull('acknowledged_at').count({ n: '*' }).first())!.n);
  t.true(await eventually(async () => (await acked()) === 6));
  // A redelivery asked for through the API is a second success, not an event acknowledged twice.
  const [first] = await h.db('webhook_dispatches').where({ webhook_id: webhookIds[0] }).limit(1);
  t.is((await api.post(`/webhooks/${webhookIds[0]}/redeliver`, { eventId: first.event_id })).status, 202);
  t.true(await eventually(async () => Number((await h.db('webhook_deliveries').where({ redelivery: true }).count({ n: '*' }).first())!.n) === 1));
  await worker.stop();
  worker = undefined;

  const clean = await runCheck();
  t.is(clean.code, 0, clean.output);
  t.regex(clean.output, /checked stock: \d+ levels/);
  t.regex(clean.output, /checked delivery: \d+ dispatches, \d+ acknowledged/);
  t.regex(clean.output, /consistent: no problems found/);

  // Action: damage of every kind the check looks for.
  // The schema forbids a negative level; the check looks anyway, in case a constraint went missing.
  await h.db.raw('alter table stock_levels drop constraint stock_levels_quantity_not_negative');
  await h.db('stock_levels').where({ item_id: itemId, location_id: locationId }).update({ quantity: -1 });
  const [delivered] = await h.db('webhook_deliveries').where({ webhook_id: webhookIds[0] }).limit(1);
  const { id: _id, ...copy } = delivered;
  await h.db('webhook_deliveries').insert({ ...copy, attempt: 2 });
  await api.post('/items', { sku: 'UNSENT', name: 'Never fanned out' });
  const { id: eventId } = await h.db('events').where({ account_id: account.accountId }).orderBy('seq', 'desc').first('id');
  await h.db.raw('select graphile_worker.remove_job(?)', [dispatchJobKey(eventId)]);
  const stranded = await h.db('webhook_dispatches').where({ webhook_id: webhookIds[1] }).first('event_id');
  await h.db('webhook_dispatches').where({ webhook_id: webhookIds[1], event_id: stranded.event_id }).update({ acknowledged_at: null });
  await h.db('webhook_deliveries').where({ webhook_id: webhookIds[1], event_id: stranded.event_id }).delete();

  // Assertions: exit 1, every problem named.
  const damaged = await runCheck();
  t.is(damaged.code, 1, damaged.output);
  t.regex(damaged.output, /6 problem\(s\)/);
  t.regex(damaged.output, new RegExp(`item ${itemId} at location ${locationId} .* is -1, its movements sum to 6`));
  t.regex(damaged.output, new RegExp(`item ${itemId} at location ${locationId} .* is negative: -1`));
  t.regex(damaged.output, new RegExp(`event ${delivered.event_id} was acknowledged 2 times by webhook ${webhookIds[0]}`));
  for (const webhookId of webhookIds) {
    t.regex(damaged.output, new RegExp(`event ${eventId} \\(item.created\\) was never dispatched to webhook ${webhookId}`));
  }
  t.regex(damaged.output, new RegExp(`event ${stranded.event_id} to webhook ${webhookIds[1]} is neither acknowledged nor scheduled`));
});

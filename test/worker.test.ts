import { Writable } from 'node:stream';
import test from 'ava';
import { pruneDeliveryLog } from '../jobs/delivery_log__prune.ts';
import { startWorker } from '../jobs/worker.ts';
import { createLogger } from '../shared/logger.ts';
import { testConfig, useHarness } from './helpers/harness.ts';
import { eventually } from './helpers/receiver.ts';
import { dispatchJobKey } from '../shared/events.ts';

const h = useHarness(test);

async function withWorker(run: (logs: string[]) => Promise<void>): Promise<void> {
  const logs: string[] = [];
  const sink = new Writable({ write(chunk, _encoding, done) { logs.push(String(chunk)); done(); } });
  const worker = await startWorker(testConfig(), h.databaseUrl, createLogger('info', 'worker', sink));
  try {
    await run(logs);
  } finally {
    await worker.stop();
  }
}

const pendingJob = async (key: string) =>
  Boolean(await h.db.raw('select 1 from graphile_worker.jobs where key = ?', [key]).then((r) => r.rows[0]));

// Serial: two workers on one database would take each other's jobs.
test.serial('the worker completes the job of each committed event; with no subscriptions nothing is dispatched', async (t) => {
  const account = await h.newAccount();
  const item = await account.api.post('/items', { sku: 'W', name: 'Worked' });
  const location = await account.api.post('/locations', { name: 'Main' });
  await account.api.post('/stock-adjustments', { itemId: item.body.id, locationId: location.body.id, quantity: 4, reason: 'count' });
  const events = await h.db('events').where({ account_id: account.accountId }).orderBy('seq').select('id', 'type');
  t.deepEqual(events.map((e) => e.type), ['item.created', 'stock.adjusted']);

  await withWorker(async () => {
    const drained = await eventually(async () => !(await Promise.all(events.map((e) => pendingJob(dispatchJobKey(e.id))))).some(Boolean));
    t.true(drained, 'every event job was completed');
  });
  t.is((await h.db('webhook_dispatches').where({ account_id: account.accountId })).length, 0);
});

test.serial('a job with a malformed payload is logged and completed, not retried forever', async (t) => {
  await h.db.raw(`select graphile_worker.add_job('events__dispatch', '{"wrong": true}'::json, job_key => 'malformed-test')`);
  await h.db.raw(`select graphile_worker.add_job('webhooks__deliver', '{"webhookId": 1}'::json, job_key => 'malformed-delivery')`);
  await withWorker(async (logs) => {
    t.true(await eventually(async () => !(await pendingJob('malformed-test')) && !(await pendingJob('malformed-delivery'))));
    t.true(logs.some((line) => line.includes('events__dispatch: malformed payload')));
    t.true(logs.some((line) => line.includes('webhooks__deliver: malformed payload')));
  });
});

test.serial('the worker writes a heartbeat and removes it when it stops', async (t) => {
  await withWorker(async () => {
    t.true(await eventually(async () => (await h.db('worker_heartbeats').count({ n: '*' }).first())!.n === 1));
  });
  t.is((await h.db('worker_heartbeats').count({ n: '*' }).first())!.n, 0);
});

test.serial('the daily prune deletes delivery log rows older than 30 days and keeps the rest', async (t) => {
  const account = await h.newAccount();
  const webhook = await h.db('webhooks').insert({ account_id: account.accountId, url: 'https://hooks.example.com/x', events: ['*'], secret_encrypted: 'x' }).returning('id');
  const item = await account.api.post('/items', { sku: 'PRUNE', name: 'Pruned' });
  const event = await h.db('events').where({ account_id: account.accountId }).first('id');
  t.truthy(item.body.id);
  const row = (days: number) => ({
    account_id: account.accountId, webhook_id: webhook[0].id, event_id: event.id, event_type: 'item.created', attempt: 1,
    outcome: 'succeeded', duration_ms: 1, created_at: h.db.raw(`now() - make_interval(days => ?)`, [days]),
  });
  await h.db('webhook_deliveries').insert([row(31), row(31), row(29)]);
  const logged: string[] = [];
  await pruneDeliveryLog(h.db).run({}, { logger: { info: (message: string) => logged.push(message) } } as never);
  t.deepEqual(logged, ['pruned 2 delivery log rows older than 30 days']);
  t.is((await h.db('webhook_deliveries').where({ account_id: account.accountId })).length, 1);
});

test('graphile-worker\'s enqueue functions are planned for every call: a backlog of jobs does not make each enqueue scan it', async (t) => {
  const { rows } = await h.db.raw(`select p.proname, p.proconfig from pg_proc p
    where p.pronamespace = 'graphile_worker'::regnamespace and p.proname in ('add_job', 'add_jobs') order by 1`);
  t.deepEqual(rows.map((row: { proname: string }) => row.proname), ['add_job', 'add_jobs']);
  for (const row of rows) t.deepEqual(row.proconfig, ['plan_cache_mode=force_custom_plan'], row.proname);
});

import { Writable } from 'node:stream';
import test from 'ava';
import { startWorker } from '../jobs/worker.ts';
import { loadConfig } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { useHarness } from './helpers/harness.ts';

const h = useHarness(test);

async function waitFor(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<boolean> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return true;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
  return false;
}

async function withWorker(run: (logs: string[]) => Promise<void>): Promise<void> {
  const logs: string[] = [];
  const sink = new Writable({ write(chunk, _encoding, done) { logs.push(String(chunk)); done(); } });
  const worker = await startWorker(loadConfig({}), h.databaseUrl, createLogger('info', 'worker', sink));
  try {
    await run(logs);
  } finally {
    await worker.stop();
  }
}

const pendingJob = async (key: string) =>
  Boolean(await h.db.raw('select 1 from graphile_worker.jobs where key = ?', [key]).then((r) => r.rows[0]));

// Serial: two workers on one database would take each other's jobs.
test.serial('the worker runs the job of each committed event and completes it', async (t) => {
  const account = await h.newAccount();
  const item = await account.api.post('/items', { sku: 'W', name: 'Worked' });
  const location = await account.api.post('/locations', { name: 'Main' });
  await account.api.post('/stock-adjustments', { itemId: item.body.id, locationId: location.body.id, quantity: 4, reason: 'count' });
  const events = await h.db('events').where({ account_id: account.accountId }).orderBy('seq').select('id', 'type');
  t.deepEqual(events.map((e) => e.type), ['item.created', 'stock.adjusted']);

  await withWorker(async (logs) => {
    const drained = await waitFor(async () => !(await Promise.all(events.map((e) => pendingJob(`event:${e.id}`)))).some(Boolean));
    t.true(drained, 'every event job was completed');
    for (const event of events) {
      t.true(logs.some((line) => line.includes(`"eventId":"${event.id}"`) && line.includes(`event ${event.type}`)), event.type);
    }
  });
});

test.serial('a job with a malformed payload is logged and completed, not retried forever', async (t) => {
  await h.db.raw(`select graphile_worker.add_job('events__dispatch', '{"wrong": true}'::json, job_key => 'malformed-test')`);
  await withWorker(async (logs) => {
    t.true(await waitFor(async () => !(await pendingJob('malformed-test'))));
    t.true(logs.some((line) => line.includes('malformed payload')));
  });
});

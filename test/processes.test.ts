import { spawn } from 'node:child_process';
import { once } from 'node:events';
import http from 'node:http';
import test from 'ava';
import { loadConfig } from '../shared/config.ts';
import { useHarness } from './helpers/harness.ts';
import { startProcess, TEST_KEY } from './helpers/processes.ts';

const h = useHarness(test);

const start = (script: string, ready: string) => startProcess(script, ready, { DATABASE_URL: h.databaseUrl });

test('web: SIGTERM lets an in-flight request finish, then exits 0', async (t) => {
  const account = await h.newAccount();
  const web = await start('server/main.ts', 'web listening');
  const port = web.readyLine.port as number;

  const body = JSON.stringify({ sku: 'INFLIGHT', name: 'Sent while the server stops' });
  const request = http.request({
    host: '127.0.0.1', port, method: 'POST', path: '/rest/api/v2/items',
    headers: { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(body), 'X-API-Key': account.key },
  });
  const responded = once(request, 'response');
  request.write(body.slice(0, 10));
  await new Promise((resolve) => setTimeout(resolve, 100));
  web.child.kill('SIGTERM');
  await new Promise((resolve) => setTimeout(resolve, 200));
  request.end(body.slice(10));

  const [response] = (await responded) as [http.IncomingMessage];
  t.is(response.statusCode, 201);
  response.resume();
  t.is(await web.exited, 0);
  t.true(web.lines.some((line) => line.includes('"msg":"stopped"')));
  t.truthy(await h.db('items').where({ account_id: account.accountId, sku: 'INFLIGHT' }).first());
});

test('worker: SIGTERM stops it cleanly with exit 0', async (t) => {
  const worker = await start('jobs/main.ts', 'worker started');
  worker.child.kill('SIGTERM');
  t.is(await worker.exited, 0);
  t.true(worker.lines.some((line) => line.includes('"msg":"stopped"')));
});

test('web and worker refuse to start without DATABASE_URL or ENCRYPTION_KEY, naming what is missing', async (t) => {
  for (const [script, env, expected] of [
    ['server/main.ts', { DATABASE_URL: '', ENCRYPTION_KEY: TEST_KEY }, /^DATABASE_URL is not set/],
    ['jobs/main.ts', { DATABASE_URL: '', ENCRYPTION_KEY: TEST_KEY }, /^DATABASE_URL is not set/],
    ['server/main.ts', { DATABASE_URL: h.databaseUrl, ENCRYPTION_KEY: '' }, /^ENCRYPTION_KEY is not set.*openssl rand -hex 32/],
    ['jobs/main.ts', { DATABASE_URL: '', ENCRYPTION_KEY: '' }, /^DATABASE_URL and ENCRYPTION_KEY are not set/],
  ] as const) {
    const child = spawn(process.execPath, [script], { env: { ...process.env, ...env } });
    let output = '';
    child.stdout.on('data', (chunk) => { output += chunk; });
    child.stderr.on('data', (chunk) => { output += chunk; });
    const [code] = await once(child, 'exit');
    t.is(code, 1, script);
    t.regex(output, expected, script);
  }
});

test('ENCRYPTION_KEY is read under its old name, WEBHOOK_SECRET_KEY, too; two different keys are refused', (t) => {
  const key = Buffer.from(TEST_KEY, 'hex');
  const other = 'ab'.repeat(32);
  t.deepEqual(loadConfig({ ENCRYPTION_KEY: TEST_KEY }).encryptionKey, key);
  t.deepEqual(loadConfig({ WEBHOOK_SECRET_KEY: TEST_KEY }).encryptionKey, key);
  t.deepEqual(loadConfig({ ENCRYPTION_KEY: TEST_KEY, WEBHOOK_SECRET_KEY: TEST_KEY }).encryptionKey, key);
  t.throws(() => loadConfig({ ENCRYPTION_KEY: TEST_KEY, WEBHOOK_SECRET_KEY: other }), { message: /both set, to different keys/ });
});

test('a bad setting stops start-up with a message naming the variable', async (t) => {
  const child = spawn(process.execPath, ['server/main.ts'], { env: { ...process.env, DATABASE_URL: h.databaseUrl, RATE_LIMIT_PER_KEY: 'lots' } });
  let stderr = '';
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const [code] = await once(child, 'exit');
  t.is(code, 1);
  t.regex(stderr, /RATE_LIMIT_PER_KEY must be an integer/);
});

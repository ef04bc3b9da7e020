// Two web processes on one database: a key's rate limit holds for both together, a revocation through the CLI stops
// a key hot in both at once, and a PostgreSQL restart neither breaks the limits nor leaves a revoked key working.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import test from 'ava';
import { createAccount, createApiKey } from '../../db/accounts.ts';
import { createDb } from '../../db/knex.ts';
import { createLogger } from '../../shared/logger.ts';
import { client } from '../helpers/client.ts';
import { eventually } from '../helpers/eventually.ts';
import { baseUrlOf, ownPostgres, sleep, startWeb } from './support.ts';

const LIMIT = 100;

async function revokeThroughCli(databaseUrl: string, keyId: string): Promise<number> {
  const child = spawn(process.execPath, ['bin/cli.ts', 'key:revoke', '--id', keyId], { env: { ...process.env, DATABASE_URL: databaseUrl } });
  const [code] = (await once(child, 'exit')) as [number];
  return code;
}

test('2 web processes: exactly the limit in all, a CLI revoke stops a hot key in both at once, a database restart changes neither', async (t) => {
  // Setup: a database of this test's own, two web processes with the default limit, keys of one account.
  const pg = await ownPostgres('limits');
  t.teardown(() => pg.destroy());
  const db = createDb(pg.url, 2, createLogger('silent'));
  t.teardown(() => db.destroy());
  const { accountId } = await createAccount(db, 'Limits', 'limits@example.com');
  const newKey = () => createApiKey(db, { accountId, email: 'limits@example.com', label: 'limits' });
  const webs = await Promise.all([startWeb(pg.url, { RATE_LIMIT_PER_KEY: String(LIMIT) }), startWeb(pg.url, { RATE_LIMIT_PER_KEY: String(LIMIT) })]);
  t.teardown(() => { for (const web of webs) web.child.kill('SIGKILL'); });
  const apis = (key: string) => webs.map((web) => client(baseUrlOf(web), key));

  // 1. 150 requests with one key, alternating between the processes: exactly LIMIT answered.
  const limited = apis((await newKey()).key);
  const statuses: number[] = [];
  for (let i = 0; i < 150; i += 1) statuses.push((await limited[i % 2]!.get('/locations')).status);
  t.is(statuses.filter((status) => status === 200).length, LIMIT, JSON.stringify(statuses));
  t.deepEqual([...new Set(statuses.slice(LIMIT))], [429]);

  // 2. A key hot in both processes (cached), revoked through the CLI: the next request to each is a 401.
  const hot = await newKey();
  const hotApis = apis(hot.key);
  for (let i = 0; i < 6; i += 1) t.is((await hotApis[i % 2]!.get('/locations')).status, 200);
  t.is(await revokeThroughCli(pg.url, hot.id), 0);
  const afterRevoke = await Promise.all(hotApis.map((api) => api.get('/locations')));
  t.deepEqual(afterRevoke.map((response) => response.status), [401, 401], 'the commit came before the CLI exited');

  // 3. PostgreSQL restarts: answers meanwhile are 200, 429 or 503 (never a 500); each process says once that it
  // lost the revocations' connection and once that it listens again; the limit is shared again after.
  const survivor = apis((await newKey()).key);
  const during: number[] = [];
  let running = true;
  const loop = (async () => {
    for (let i = 0; running; i += 1) {
      during.push((await survivor[i % 2]!.get('/locations')).status);
      await sleep(20);
    }
  })();
  await sleep(300);
  await pg.stop();
  await sleep(1500);
  await pg.start();
  t.true(await eventually(async () => (await survivor[0]!.get('/locations')).status === 200 && (await survivor[1]!.get('/locations')).status === 200, 20_000));
  running = false;
  await loop;
  t.deepEqual([...new Set(during)].filter((status) => ![200, 429, 503].includes(status)), [], JSON.stringify(during));
  t.true(during.includes(503), 'the outage was seen');
  const said = (web: (typeof webs)[number], text: string) => web.lines.filter((line) => line.includes(text)).length;
  t.true(await eventually(() => webs.every((web) => said(web, 'key revocations: listening again') > 0), 10_000), 'both listen again');
  for (const web of webs) {
    t.is(said(web, 'lost the listening connection'), 1);
    t.is(said(web, 'key revocations: listening again'), 1);
    t.false(web.lines.some((line) => line.includes('unhandled error')));
  }
  const fresh = apis((await newKey()).key);
  const shared: number[] = [];
  for (let i = 0; i < LIMIT + 10; i += 1) shared.push((await fresh[i % 2]!.get('/locations')).status);
  t.is(shared.filter((status) => status === 200).length, LIMIT, 'shared again after the restart');

  // A key revoked while a process was cut off is refused by it too, once it is back.
  const late = await newKey();
  const lateApis = apis(late.key);
  for (const api of lateApis) t.is((await api.get('/locations')).status, 200);
  t.is(await revokeThroughCli(pg.url, late.id), 0);
  t.deepEqual((await Promise.all(lateApis.map((api) => api.get('/locations')))).map((response) => response.status), [401, 401]);
});

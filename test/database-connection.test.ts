// DATABASE_URL read as psql reads it, against a throw-away server that accepts only TLS with a certificate of its
// own authority (as managed platforms give), and every way of failing to start said in one line.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer, type Socket } from 'node:net';
import anyTest, { type ExecutionContext, type TestFn } from 'ava';
import pg from 'pg';
import { connectionSettings, connectionTarget } from '../db/connection.ts';
import { ConfigError } from '../shared/config.ts';
import { startProcess, TEST_KEY } from './helpers/processes.ts';
import { startTlsOnlyPostgres, type TlsServer } from './helpers/tls-postgres.ts';

const test = anyTest as TestFn<{ server: TlsServer }>;

test.before(async (t) => {
  t.context.server = await startTlsOnlyPostgres();
  const admin = new pg.Client(await connectionSettings(t.context.server.url('postgres')));
  await admin.connect();
  await admin.query('create database app');
  await admin.query('create database unmigrated');
  await admin.end();
});
test.after.always(async (t) => { await t.context.server?.stop(); });

interface Ran { code: number | null; stdout: string; stderr: string }

/** Runs an entry point to its end (or until `timeoutMs`, then SIGTERM). */
async function run(script: string, args: string[], env: Record<string, string>, timeoutMs = 20_000): Promise<Ran> {
  const child = spawn(process.execPath, [script, ...args], {
    env: { ...process.env, ENCRYPTION_KEY: TEST_KEY, PORT: '0', HOST: '127.0.0.1', PGSSLMODE: '', PGSSLROOTCERT: '', ...env },
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk) => { stdout += chunk; });
  child.stderr.on('data', (chunk) => { stderr += chunk; });
  const timer = setTimeout(() => child.kill('SIGTERM'), timeoutMs);
  const [code] = await once(child, 'exit');
  clearTimeout(timer);
  return { code: code as number | null, stdout, stderr };
}

const ENTRY_POINTS: Array<[string, string[]]> = [
  ['db/migrate.ts', []],
  ['server/main.ts', []],
  ['jobs/main.ts', []],
  ['bin/cli.ts', ['key:list', '--account', '00000000-0000-4000-8000-000000000000']],
];

/** Every entry point stops with exit code 1 and `expected` as the one line on stderr, no stack trace. */
async function assertOneLineFailure(t: ExecutionContext, url: string, expected: RegExp, env: Record<string, string> = {}, entryPoints = ENTRY_POINTS) {
  const results = await Promise.all(entryPoints.map(([script, args]) => run(script, args, { DATABASE_URL: url, ...env })));
  results.forEach((result, index) => {
    const [script] = entryPoints[index]!;
    t.is(result.code, 1, `${script}: ${result.stderr}`);
    const lines = result.stderr.split('\n').filter(Boolean);
    t.is(lines.length, 1, `${script} wrote one line: ${result.stderr}`);
    t.regex(lines[0] ?? '', expected, script);
    t.notRegex(result.stderr, /\n\s+at /, `${script}: no stack trace`);
  });
}

test.serial('a DATABASE_URL without sslmode (as Heroku gives it) uses TLS unverified: migrate, CLI, web, worker and the consistency check work', async (t) => {
  const url = t.context.server.url('app');
  const migrated = await run('db/migrate.ts', [], { DATABASE_URL: url });
  t.is(migrated.code, 0, migrated.stderr);
  t.regex(migrated.stdout, /Applied migrations: 001_foundation/);
  t.is(migrated.stderr, '');

  const account = await run('bin/cli.ts', ['account:create', '--name', 'Managed', '--user', 'ops@managed.example'], { DATABASE_URL: url });
  t.is(account.code, 0, account.stderr);
  const { accountId } = JSON.parse(account.stdout);
  const created = await run('bin/cli.ts', ['key:create', '--account', accountId, '--user', 'ops@managed.example'], { DATABASE_URL: url });
  t.is(created.code, 0, created.stderr);
  const { key } = JSON.parse(created.stdout);

  const web = await startProcess('server/main.ts', 'web listening', { DATABASE_URL: url });
  const worker = await startProcess('jobs/main.ts', 'worker started', { DATABASE_URL: url });
  try {
    const base = `http://127.0.0.1:${web.readyLine.port as number}/rest/api/v2`;
    const headers = { 'X-API-Key': key, 'Content-Type': 'application/json' };
    const item = await fetch(`${base}/items`, { method: 'POST', headers, body: JSON.stringify({ sku: 'TLS-1', name: 'Over TLS' }) });
    t.is(item.status, 201);
    t.is((await fetch(`${base}/items`, { headers })).status, 200);

    // Every connection of ours to this server is encrypted (it would refuse any other, but say it plainly).
    const admin = new pg.Client(await connectionSettings(t.context.server.url('postgres')));
    await admin.connect();
    const { rows } = await admin.query<{ ssl: boolean; n: number }>(`select s.ssl, count(*)::int as n from pg_stat_activity a
      join pg_stat_ssl s using (pid) where a.datname = 'app' group by s.ssl`);
    await admin.end();
    t.deepEqual(rows.map((row) => row.ssl), [true]);
    t.true(rows[0]!.n >= 2, 'the web and the worker are connected');
  } finally {
    web.child.kill('SIGTERM');
    worker.child.kill('SIGTERM');
  }
  t.is(await web.exited, 0);
  t.is(await worker.exited, 0);

  const checked = await run('bin/check-consistency.ts', [], { DATABASE_URL: url });
  t.is(checked.code, 0, checked.stderr + checked.stdout);
  t.regex(checked.stdout, /consistent: no problems found/);
});

test('sslmode=verify-full with the right authority (sslrootcert, or PGSSLROOTCERT) connects; a wrong or missing one is refused in one line', async (t) => {
  const { server } = t.context;
  const verified = await run('db/migrate.ts', [], { DATABASE_URL: server.url('postgres', { sslmode: 'verify-full', sslrootcert: server.caFile }) });
  t.is(verified.code, 0, verified.stderr);
  const fromEnv = await run('db/migrate.ts', [], { DATABASE_URL: server.url('postgres', { sslmode: 'verify-full' }), PGSSLROOTCERT: server.caFile });
  t.is(fromEnv.code, 0, fromEnv.stderr);

  const refused = /^DATABASE_URL: the TLS certificate of PostgreSQL at 127\.0\.0\.1:\d+\/app could not be verified under sslmode=verify-full \(.+\): set sslrootcert/;
  await assertOneLineFailure(t, server.url('app', { sslmode: 'verify-full', sslrootcert: server.otherCaFile }), refused);
  await assertOneLineFailure(t, server.url('app', { sslmode: 'verify-full' }), refused, {}, ENTRY_POINTS.slice(0, 1));
});

test('sslmode=disable never uses TLS: the TLS-only server refuses it (28000), and the line says what to change', async (t) => {
  await assertOneLineFailure(t, t.context.server.url('app', { sslmode: 'disable' }),
    /^DATABASE_URL: PostgreSQL at .+ refused the connection: no pg_hba.conf entry .+ no encryption \(28000\): the server may accept only TLS connections: drop sslmode=disable/);
});

test('a wrong password, an unreachable server, a missing database, a malformed URL: one line each, exit 1, for migrate, web, worker and the CLI', async (t) => {
  const { server } = t.context;
  await assertOneLineFailure(t, server.url('app').replace(':stockroom-local@', ':wrong@'),
    /^DATABASE_URL: PostgreSQL at 127\.0\.0\.1:\d+\/app refused the password: password authentication failed for user "postgres" \(28P01\)/);
  await assertOneLineFailure(t, 'postgres://postgres:secret@127.0.0.1:1/app',
    /^DATABASE_URL: cannot reach PostgreSQL at 127\.0\.0\.1:1\/app \(ECONNREFUSED\)/);
  await assertOneLineFailure(t, server.url('missing'), /^DATABASE_URL: PostgreSQL at .+\/missing: database "missing" does not exist \(3D000\)/);
  await assertOneLineFailure(t, 'mysql://root@localhost/app', /^Configuration error: DATABASE_URL must be a PostgreSQL URL/);
  await assertOneLineFailure(t, server.url('app', { sslmode: 'sometimes' }), /DATABASE_URL's sslmode \(or PGSSLMODE\) must be one of disable, allow, prefer/);
  // The password is in the URL; no line repeats it.
  const wrong = await run('server/main.ts', [], { DATABASE_URL: 'postgres://postgres:hunter2@127.0.0.1:1/app' });
  t.false(wrong.stderr.includes('hunter2'));
});

test('web, worker and the CLI refuse a database that is not migrated, naming the command that migrates it; migrate then fixes it', async (t) => {
  const url = t.context.server.url('unmigrated');
  await assertOneLineFailure(t, url,
    /^DATABASE_URL: the database at 127\.0\.0\.1:\d+\/unmigrated is not migrated \(0 of \d+ migrations applied, next 001_foundation\): run `npm run migrate` first/,
    {}, ENTRY_POINTS.slice(1));
  t.is((await run('db/migrate.ts', [], { DATABASE_URL: url })).code, 0);
  const account = await run('bin/cli.ts', ['account:create', '--name', 'Late', '--user', 'ops@late.example'], { DATABASE_URL: url });
  t.is(account.code, 0, account.stderr);
});

/**
 * A server that speaks just enough of PostgreSQL's protocol to show what a client asked for: it declines TLS
 * ('N') and answers any start-up with a wrong-password error.
 */
async function plainServer(): Promise<{ url: (params?: string) => string; firstPackets: string[]; close: () => void }> {
  const firstPackets: string[] = [];
  const server = createServer((socket: Socket) => {
    socket.once('data', function first(packet: Buffer) {
      const code = packet.readInt32BE(4);
      firstPackets.push(code === 80877103 ? 'tls-request' : code === 196608 ? 'startup' : `other ${code}`);
      if (code === 80877103) {
        socket.write('N');
        socket.once('data', (next: Buffer) => answerStartup(socket, next));
      } else {
        answerStartup(socket, packet);
      }
    });
    socket.on('error', () => {});
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  return { url: (params = '') => `postgres://app:secret@127.0.0.1:${port}/app${params}`, firstPackets, close: () => server.close() };
}

function answerStartup(socket: Socket, packet: Buffer): void {
  if (packet.readInt32BE(4) !== 196608) return void socket.destroy();
  const fields = Buffer.from('SFATAL\0C28P01\0Mpassword authentication failed for user "app"\0\0');
  const header = Buffer.alloc(5);
  header.write('E');
  header.writeInt32BE(fields.length + 4, 1);
  socket.end(Buffer.concat([header, fields]));
}

test('against a server without TLS: no sslmode falls back to plain, sslmode=disable never asks, sslmode=require refuses in one line', async (t) => {
  const server = await plainServer();
  try {
    const preferred = await run('db/migrate.ts', [], { DATABASE_URL: server.url() });
    t.regex(preferred.stderr, /^DATABASE_URL: PostgreSQL at .+ refused the password: .+ \(28P01\)/, 'it went on without TLS as far as the password');
    t.deepEqual(server.firstPackets.splice(0), ['tls-request', 'startup']);

    await run('db/migrate.ts', [], { DATABASE_URL: server.url('?sslmode=disable') });
    t.deepEqual(server.firstPackets.splice(0), ['startup'], 'disable never asks for TLS');
    await run('db/migrate.ts', [], { DATABASE_URL: server.url(), PGSSLMODE: 'disable' });
    t.deepEqual(server.firstPackets.splice(0), ['startup'], 'PGSSLMODE applies when the URL has no sslmode');

    await assertOneLineFailure(t, server.url('?sslmode=require'),
      /^DATABASE_URL: sslmode=require asks for TLS, and PostgreSQL at 127\.0\.0\.1:\d+\/app does not offer it: use sslmode=prefer/);
  } finally {
    server.close();
  }
});

test('connectionTarget reads libpq\'s parameters and names what is wrong with them', (t) => {
  t.is(connectionTarget('postgres://u:p@db.example:6543/shop').sslMode, 'prefer');
  t.is(connectionTarget('postgres://u:p@db.example/shop', { PGSSLMODE: 'require' }).sslMode, 'require');
  t.is(connectionTarget('postgres://u:p@db.example/shop?sslmode=disable', { PGSSLMODE: 'require' }).sslMode, 'disable');
  t.is(connectionTarget('postgres://u:p@db.example/shop?ssl=true').sslMode, 'require', 'node-postgres\'s ssl=true asks for TLS');
  t.is(connectionTarget('postgres://u:p@db.example/shop?sslmode=require', { PGSSLROOTCERT: '' }).tls.rejectUnauthorized, false,
    'an empty PGSSLROOTCERT is none: require stays unverified');
  const target = connectionTarget('postgres://u:p@db.example:6543/shop?sslmode=no-verify&application_name=x');
  t.is(target.describe, 'db.example:6543/shop');
  t.false(target.connectionString.includes('sslmode'), 'TLS parameters are ours to apply, not pg-connection-string\'s');
  t.true(target.connectionString.includes('application_name=x'));
  t.is(target.tls.rejectUnauthorized, false);
  t.throws(() => connectionTarget('postgres://u:p@db.example/shop?sslmode=verify-full&sslrootcert=/nowhere/ca.crt'),
    { instanceOf: ConfigError, message: /sslrootcert names \/nowhere\/ca.crt, which cannot be read \(ENOENT\)/ });
});

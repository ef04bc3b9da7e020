import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import test from 'ava';
import { useHarness } from './helpers/harness.ts';

const h = useHarness(test);
const run = promisify(execFile);

async function cli(...args: string[]) {
  try {
    const { stdout, stderr } = await run(process.execPath, ['bin/cli.ts', ...args], {
      env: { ...process.env, DATABASE_URL: h.databaseUrl },
    });
    return { code: 0, stdout, stderr };
  } catch (error) {
    const failed = error as { code: number; stdout: string; stderr: string };
    return { code: failed.code, stdout: failed.stdout, stderr: failed.stderr };
  }
}

test('account:create, key:create, key:list and key:revoke work end to end', async (t) => {
  const account = await cli('account:create', '--name', 'Acme', '--user', 'ops@acme.example');
  t.is(account.code, 0, account.stderr);
  const { accountId, userId } = JSON.parse(account.stdout);
  t.regex(accountId, /^[0-9a-f-]{36}$/);
  t.regex(userId, /^[0-9a-f-]{36}$/);

  const created = await cli('key:create', '--account', accountId, '--user', 'ops@acme.example', '--name', 'erp sync');
  t.is(created.code, 0, created.stderr);
  const { id, key } = JSON.parse(created.stdout);
  t.true(key.length >= 43);

  const api = h.app.api(key);
  t.is((await api.get('/items')).status, 200);
  t.is((await api.post('/items', { sku: 'CLI-1', name: 'Made with a CLI key' })).status, 201);

  const listed = await cli('key:list', '--account', accountId);
  t.is(listed.code, 0);
  const keys = JSON.parse(listed.stdout);
  t.is(keys.length, 1);
  t.like(keys[0], { id, label: 'erp sync', userId, userEmail: 'ops@acme.example', revokedAt: null });
  t.false(listed.stdout.includes(key), 'the key value is never shown again');

  const revoked = await cli('key:revoke', '--id', id);
  t.is(revoked.code, 0);
  t.regex(JSON.parse(revoked.stdout).revokedAt, /^\d{4}-/);
  t.is((await api.get('/items')).status, 401);
  t.truthy(JSON.parse((await cli('key:list', '--account', accountId)).stdout)[0].revokedAt);
});

test('key:create for a new email creates that user in the account', async (t) => {
  const { accountId } = JSON.parse((await cli('account:create', '--name', 'Beta', '--user', 'first@beta.example')).stdout);
  const created = await cli('key:create', '--account', accountId, '--user', 'Second@Beta.example');
  t.is(created.code, 0, created.stderr);
  const users = await h.db('users').where({ account_id: accountId }).orderBy('created_at').pluck('email');
  t.deepEqual(users, ['first@beta.example', 'second@beta.example']);
  const [row] = await h.db('api_keys').where({ 'api_keys.id': JSON.parse(created.stdout).id }).join('users', 'users.id', 'api_keys.user_id').select('users.email');
  t.is(row.email, 'second@beta.example');
});

test('clear errors and a non-zero exit: unknown account, bad email, missing option, unknown command', async (t) => {
  const unknownAccount = await cli('key:create', '--account', '00000000-0000-4000-8000-000000000000', '--user', 'a@b.example');
  t.is(unknownAccount.code, 1);
  t.regex(unknownAccount.stderr, /No account with id/);
  t.is(unknownAccount.stdout, '');

  const malformedAccount = await cli('key:list', '--account', 'nope');
  t.is(malformedAccount.code, 1);
  t.regex(malformedAccount.stderr, /No account with id "nope"/);

  const badEmail = await cli('account:create', '--name', 'X', '--user', 'not-an-email');
  t.is(badEmail.code, 1);
  t.regex(badEmail.stderr, /not a valid email/);
  t.is(await h.db('accounts').where({ name: 'X' }).first(), undefined, 'nothing was written');

  const missing = await cli('account:create', '--name', 'X');
  t.is(missing.code, 2);
  t.regex(missing.stderr, /--user is required/);

  const unknownCommand = await cli('account:delete');
  t.is(unknownCommand.code, 2);
  t.regex(unknownCommand.stderr, /Unknown command "account:delete"/);

  const unknownKey = await cli('key:revoke', '--id', '00000000-0000-4000-8000-000000000000');
  t.is(unknownKey.code, 1);
  t.regex(unknownKey.stderr, /No API key with id/);

  const help = await cli('help');
  t.is(help.code, 0);
  t.regex(help.stdout, /account:create/);
});

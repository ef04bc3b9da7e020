// `npm test`: one PostgreSQL for the run (DATABASE_URL's server, or a throw-away embedded one), a template
// database migrated once, then ava. Each test file copies the template into a database of its own.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { migrateLatest } from '../db/migrations/index.ts';
import { createDatabase, dropDatabase, startScratchServer } from './helpers/database.ts';

const started = performance.now();
const server = await startScratchServer('test').catch((error: Error) => {
  process.stderr.write(`Could not start a PostgreSQL for the tests: ${error.message}\n`);
  process.exit(1);
});
if (server.embedded) process.stdout.write(`Embedded PostgreSQL for the tests started in ${Math.round(performance.now() - started)} ms\n`);

const template = `stockroom_test_template_${process.pid}`;
let exitCode = 1;
try {
  await migrateLatest(await createDatabase(server.adminUrl, template));
  const ava = spawn(process.execPath, ['node_modules/ava/entrypoints/cli.js', ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, TEST_ADMIN_DATABASE_URL: server.adminUrl, TEST_TEMPLATE_DATABASE: template, DATABASE_URL: '' },
  });
  const [code] = (await once(ava, 'exit')) as [number | null];
  exitCode = code ?? 1;
} finally {
  await dropDatabase(server.adminUrl, template).catch(() => {});
  await server.stop();
}
process.exit(exitCode);

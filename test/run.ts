// `npm test`: one PostgreSQL for the run (DATABASE_URL's server, or a throw-away embedded one), a template
// database migrated once, then ava. Each test file copies the template into a database of its own.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { startEmbeddedPostgres, type EmbeddedServer } from '../db/embedded.ts';
import { migrateLatest } from '../db/migrations.ts';

async function freePort(): Promise<number> {
  const server = createServer().listen(0, '127.0.0.1');
  await once(server, 'listening');
  const { port } = server.address() as { port: number };
  server.close();
  return port;
}

function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

async function createTemplate(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`drop database if exists ${client.escapeIdentifier(name)} with (force)`);
    await client.query(`create database ${client.escapeIdentifier(name)}`);
  } finally {
    await client.end();
  }
  await migrateLatest(withDatabase(adminUrl, name));
}

async function dropTemplate(adminUrl: string, name: string): Promise<void> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  await client.query(`drop database if exists ${client.escapeIdentifier(name)} with (force)`).finally(() => client.end());
}

let embedded: EmbeddedServer | undefined;
let adminUrl = process.env.DATABASE_URL;
if (!adminUrl) {
  const started = performance.now();
  embedded = await startEmbeddedPostgres({
    dataDir: join(tmpdir(), `stockroom-test-${process.pid}-${Date.now()}`),
    port: await freePort(),
    durable: false,
  });
  adminUrl = embedded.urlFor('postgres');
  process.stdout.write(`Embedded PostgreSQL for the tests started in ${Math.round(performance.now() - started)} ms\n`);
}

const template = `stockroom_test_template_${process.pid}`;
let exitCode = 1;
try {
  await createTemplate(adminUrl, template);
  const ava = spawn(process.execPath, ['node_modules/ava/entrypoints/cli.js', ...process.argv.slice(2)], {
    stdio: 'inherit',
    env: { ...process.env, TEST_ADMIN_DATABASE_URL: adminUrl, TEST_TEMPLATE_DATABASE: template, DATABASE_URL: '' },
  });
  const [code] = (await once(ava, 'exit')) as [number | null];
  exitCode = code ?? 1;
} finally {
  await dropTemplate(adminUrl, template).catch(() => {});
  await embedded?.stop();
}
process.exit(exitCode);

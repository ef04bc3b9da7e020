// Per test file: a database copied from the migrated template, and apps listening on ephemeral ports.
import { randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import type { TestFn } from 'ava';
import type { Knex } from 'knex';
import { createDb } from '../../db/knex.ts';
import { createApp } from '../../server/app.ts';
import { createHttpServer } from '../../server/web.ts';
import { createAccount, createApiKey } from '../../db/accounts.ts';
import { loadConfig, type Config } from '../../shared/config.ts';
import { createLogger } from '../../shared/logger.ts';
import type { ResolveHost } from '../../shared/webhook-urls.ts';
import { client, type Client } from './client.ts';
import { createDatabase, dropDatabase } from './database.ts';

const adminUrl = process.env.TEST_ADMIN_DATABASE_URL;
const template = process.env.TEST_TEMPLATE_DATABASE;

export interface TestAccount {
  accountId: string;
  userId: string;
  key: string;
  api: Client;
}

export interface RunningApp {
  baseUrl: string;
  /** Every line the app logged, as written. */
  logs: string[];
  api(key?: string): Client;
  close(): Promise<void>;
}

export interface Harness {
  db: Knex;
  databaseUrl: string;
  /** The default app: limits high enough never to interfere. */
  app: RunningApp;
  startApp(overrides?: Partial<Config>, deps?: { db?: Knex; resolveHost?: ResolveHost }): Promise<RunningApp>;
  newAccount(name?: string): Promise<TestAccount>;
}

/** ENCRYPTION_KEY of this file's apps, workers and processes: what one encrypts, the others can read. */
export const TEST_KEY = randomBytes(32).toString('hex');

const TEST_CONFIG: Partial<Config> = {
  rateLimitPerKey: 1_000_000,
  rateLimitPerIp: 1_000_000,
  port: 0,
  host: '127.0.0.1',
  encryptionKey: Buffer.from(TEST_KEY, 'hex'),
};

/** The configuration the test apps and workers of this file run with. */
export function testConfig(overrides: Partial<Config> = {}): Config {
  return { ...loadConfig({}), ...TEST_CONFIG, ...overrides };
}

/** Registers before/after hooks on `test` and returns the harness they fill in. */
export function useHarness(test: TestFn, overrides: Partial<Config> = {}): Harness {
  if (!adminUrl || !template) throw new Error('Run the tests with `npm test`: it prepares the database.');
  const database = `stockroom_test_${randomBytes(6).toString('hex')}`;
  const apps: RunningApp[] = [];
  const harness = {} as Harness;

  async function startApp(appOverrides: Partial<Config> = {}, deps: { db?: Knex; resolveHost?: ResolveHost } = {}): Promise<RunningApp> {
    const config = testConfig({ ...overrides, ...appOverrides });
    const logs: string[] = [];
    const sink = new Writable({ write(chunk, _encoding, done) { logs.push(String(chunk)); done(); } });
    const app = createApp({ db: deps.db ?? harness.db, resolveHost: deps.resolveHost, config, logger: createLogger('info', 'test', sink) });
    const server = createHttpServer(app, config).listen(0, '127.0.0.1');
    await new Promise((resolve) => server.once('listening', resolve));
    const baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    const running: RunningApp = {
      baseUrl,
      logs,
      api: (key) => client(baseUrl, key),
      close: () => new Promise((resolve) => { server.close(() => resolve()); server.closeAllConnections(); }),
    };
    apps.push(running);
    return running;
  }

  // Serial, so that the file's own before hooks (registered later) run once the harness is ready.
  test.serial.before(async () => {
    harness.databaseUrl = await createDatabase(adminUrl, database, template);
    harness.db = createDb(harness.databaseUrl, 20);
    harness.startApp = startApp;
    harness.app = await startApp();
    harness.newAccount = async (name = 'Test account') => {
      const email = `owner-${randomBytes(4).toString('hex')}@example.com`;
      const { accountId, userId } = await createAccount(harness.db, name, email);
      const { key } = await createApiKey(harness.db, { accountId, email, label: 'test' });
      return { accountId, userId, key, api: harness.app.api(key) };
    };
  });

  test.after.always(async () => {
    await Promise.all(apps.map((app) => app.close()));
    await harness.db?.destroy();
    await dropDatabase(adminUrl, database);
  });

  return harness;
}

// `npm start`: everything on one machine. The embedded PostgreSQL when DATABASE_URL is absent, migrations,
// a demo account on an empty database, then the web and the worker in this one process.
import { randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { createDb } from '../db/knex.ts';
import { reachableDataDir } from '../db/embedded.ts';
import { resolveDatabase, type LocalDatabase } from '../db/local.ts';
import { migrateLatest } from '../db/migrations/index.ts';
import { checkDatabase } from '../db/startup.ts';
import { startWorker } from '../jobs/worker.ts';
import { API_PREFIX } from '../server/routes.ts';
import { startWebServer } from '../server/web.ts';
import { countAccounts, createAccount, createApiKey } from '../db/accounts.ts';
import { loadConfigOrExit } from '../shared/config.ts';
import { createLogger } from '../shared/logger.ts';
import { onShutdown } from '../shared/shutdown.ts';

const say = (line: string) => process.stdout.write(`${line}\n`);

/** Without ENCRYPTION_KEY, a key of this machine's own, kept beside the embedded database. */
function localEncryptionKey(dataDir: string): Buffer {
  const file = join(dirname(dataDir), 'encryption-key');
  // Its name before it also encrypted Idempotency-Key answers: a data folder made then keeps its key.
  const before = join(dirname(dataDir), 'webhook-secret-key');
  if (!existsSync(file) && existsSync(before)) renameSync(before, file);
  if (!existsSync(file)) {
    mkdirSync(dirname(file), { recursive: true });
    writeFileSync(file, randomBytes(32).toString('hex'), { mode: 0o600 });
  }
  return Buffer.from(readFileSync(file, 'utf8').trim(), 'hex');
}

const loaded = loadConfigOrExit();
const config = { ...loaded, encryptionKey: loaded.encryptionKey ?? localEncryptionKey(loaded.embeddedPgDir) };
const logger = createLogger(config.logLevel, 'stockroom');

let database: LocalDatabase | undefined;
const stopDatabase = async () => { await database?.server?.stop(); };

try {
  if (!config.databaseUrl) say(`No DATABASE_URL: using the embedded PostgreSQL in ${reachableDataDir(config.embeddedPgDir)} (port ${config.embeddedPgPort})...`);
  database = await resolveDatabase(config, (message) => logger.debug({ postgres: message.trim() }, 'postgres'));
  if (config.databaseUrl) await checkDatabase(config.databaseUrl, { migrated: false });
  const applied = await migrateLatest(database.url);
  if (applied.length) say(`Applied migrations: ${applied.join(', ')}`);

  const db = createDb(database.url, config.dbPoolMax, logger);
  if ((await countAccounts(db)) === 0) {
    const { accountId } = await createAccount(db, 'Demo account', 'demo@example.com');
    const { key } = await createApiKey(db, { accountId, email: 'demo@example.com', label: 'demo' });
    say('');
    say(`Created a demo account (id ${accountId}, user demo@example.com). Its API key is shown this once:`);
    say(`  X-API-Key: ${key}`);
    say('');
  }

  const web = await startWebServer(config, db, logger, database.url);
  const worker = await startWorker(config, database.url, logger);
  const base = `http://localhost:${web.port}`;
  onShutdown(logger, config.shutdownTimeoutMs, web.close, worker.stop, () => db.destroy(), stopDatabase);
  say(`Stockroom API at ${base}${API_PREFIX} · Swagger UI at ${base}${API_PREFIX}/docs/swagger · Ctrl-C stops`);
} catch (error) {
  process.stderr.write(`Could not start: ${error instanceof Error ? error.message : String(error)}\n`);
  await stopDatabase();
  process.exit(1);
}

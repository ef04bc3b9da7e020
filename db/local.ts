// The database a command uses when DATABASE_URL is absent: the embedded PostgreSQL in the project's data folder.
import pg from 'pg';
import type { Knex } from 'knex';
import { createDb } from './knex.ts';
import { checkDatabase } from './startup.ts';
import { migrateLatest } from './migrations/index.ts';
import type { Config } from '../shared/config.ts';
import { embeddedUrl, startEmbeddedPostgres, type EmbeddedServer } from './embedded.ts';

const LOCAL_DATABASE = 'stockroom';

export interface LocalDatabase {
  url: string;
  /** The embedded server when this process started it (and so must stop it). */
  server?: EmbeddedServer;
}

async function answers(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 1000 });
  try {
    await client.connect();
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => {});
  }
}

/** DATABASE_URL; else the embedded server another process (`npm start`) already runs; else one started here. */
export async function resolveDatabase(config: Config, onLog?: (message: string) => void): Promise<LocalDatabase> {
  if (config.databaseUrl) return { url: config.databaseUrl };
  const server = await startOrReuse(config, onLog);
  if (!server) return { url: embeddedUrl(config.embeddedPgPort, LOCAL_DATABASE) };
  await server.ensureDatabase(LOCAL_DATABASE);
  return { url: server.urlFor(LOCAL_DATABASE), server };
}

async function startOrReuse(config: Config, onLog?: (message: string) => void): Promise<EmbeddedServer | undefined> {
  if (await answers(embeddedUrl(config.embeddedPgPort, 'postgres'))) return undefined;
  return startEmbeddedPostgres({ dataDir: config.embeddedPgDir, port: config.embeddedPgPort, onLog });
}

/**
 * Runs `work` for a one-off command (the CLI, the consistency check) against DATABASE_URL, or the embedded
 * database of `npm start` (running or not; started here it may be new, so its schema is brought up first).
 */
export async function withCommandDatabase<T>(config: Config, work: (db: Knex) => Promise<T>): Promise<T> {
  const database = await resolveDatabase(config);
  // DATABASE_URL's failures (unreachable, refused, not migrated) in one line, before any work.
  if (config.databaseUrl) await checkDatabase(config.databaseUrl, { migrated: true });
  const db = createDb(database.url, 1);
  try {
    if (database.server) await migrateLatest(database.url);
    return await work(db);
  } finally {
    await db.destroy();
    await database.server?.stop();
  }
}

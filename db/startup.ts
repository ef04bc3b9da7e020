// What a process checks before it says it has started: that DATABASE_URL reaches a PostgreSQL that lets it in
// (and, for web and worker, that the schema is migrated). Each way of failing is one line naming the setting and
// the cause: the line an operator reads in a platform's log, where a stack trace would hide it.
import pg from 'pg';
import { ConfigError } from '../shared/config.ts';
import { connectionSettings, connectionTarget, isNoTlsOffered, type ConnectionTarget } from './connection.ts';
import { EmbeddedSetupError } from './embedded.ts';
import { CONNECT_TIMEOUT_MS } from './knex.ts';
import { MIGRATION_NAMES } from './migrations/index.ts';

/** A reason not to start, already said in one line. */
export class StartupError extends Error {}

type PgError = Error & { code?: string };

const UNREACHABLE = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ECONNRESET']);
const TIMED_OUT = /timeout|timed out/i;
// Node's codes for a certificate it could not verify (self-signed, unknown issuer, wrong name, expired...).
const CERTIFICATE = /CERT|SELF_SIGNED|UNABLE_TO_VERIFY|UNABLE_TO_GET_ISSUER/;

const REMEDY = {
  verify: 'set sslrootcert in DATABASE_URL (or PGSSLROOTCERT) to the certificate of the authority that signed it, '
    + 'or use sslmode=require to encrypt without verifying',
  noTls: 'use sslmode=prefer (TLS when offered) or sslmode=disable',
  hba: 'the server may accept only TLS connections: drop sslmode=disable, or ask for this address and user to be allowed',
};

/** The one line for a failure to connect to `target`. */
export function describeConnectionError(error: PgError, target: ConnectionTarget): string {
  const where = `PostgreSQL at ${target.describe}`;
  const code = error.code ?? '';
  if (isNoTlsOffered(error)) return `DATABASE_URL: sslmode=${target.sslMode} asks for TLS, and ${where} does not offer it: ${REMEDY.noTls}`;
  if (CERTIFICATE.test(code)) {
    // Node's message goes on with advice about Node's own flags: not this setting's remedy.
    const reason = error.message.split(';')[0];
    return `DATABASE_URL: the TLS certificate of ${where} could not be verified under sslmode=${target.sslMode} (${reason}): ${REMEDY.verify}`;
  }
  if (code === '28P01') return `DATABASE_URL: ${where} refused the password: ${error.message} (28P01): check the user and password`;
  if (code === '28000') {
    return `DATABASE_URL: ${where} refused the connection: ${error.message} (28000)${target.sslMode === 'disable' ? `: ${REMEDY.hba}` : ''}`;
  }
  if (code === '3D000') return `DATABASE_URL: ${where}: ${error.message} (3D000): create it, or correct the database name`;
  if (UNREACHABLE.has(code) || TIMED_OUT.test(error.message)) {
    return `DATABASE_URL: cannot reach ${where} (${code || error.message}): is the server up and the host and port right?`;
  }
  if (code.startsWith('ERR_SSL') || code === 'EPROTO') return `DATABASE_URL: TLS with ${where} failed (${error.message})`;
  return `DATABASE_URL: could not connect to ${where}: ${error.message}${code ? ` (${code})` : ''}`;
}

/** The names of our migrations this database has not run, and whether graphile-worker's schema is there. */
async function migrationState(client: pg.Client): Promise<{ pending: string[]; queue: boolean }> {
  const { rows: [state] } = await client.query<{ table: boolean; queue: boolean }>(`select
    to_regclass('knex_migrations') is not null as table,
    to_regprocedure('graphile_worker.add_jobs(graphile_worker.job_spec[], boolean)') is not null as queue`);
  const ran = new Set(state!.table ? (await client.query<{ name: string }>('select name from knex_migrations')).rows.map((row) => row.name) : []);
  return { pending: MIGRATION_NAMES.filter((name) => !ran.has(name)), queue: state!.queue };
}

/**
 * Connects once to `url` as every connection will (db/connection.ts) and, with `migrated`, checks that the schema
 * is this version's. A schema newer than this code is fine: a release migrates before the old processes stop.
 */
export async function checkDatabase(url: string, options: { migrated: boolean }): Promise<void> {
  const target = connectionTarget(url);
  const client = await (async () => {
    try {
      const client = new pg.Client({ ...await connectionSettings(url, { timeoutMs: CONNECT_TIMEOUT_MS }), connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
      client.on('error', () => {});
      await client.connect();
      return client;
    } catch (error) {
      throw new StartupError(describeConnectionError(error as PgError, target));
    }
  })();
  try {
    if (!options.migrated) return;
    const { pending, queue } = await migrationState(client);
    if (pending.length || !queue) {
      const applied = MIGRATION_NAMES.length - pending.length;
      const state = pending.length
        ? `${applied} of ${MIGRATION_NAMES.length} migrations applied, next ${pending[0]}`
        : 'the job queue\'s schema is missing';
      throw new StartupError(`DATABASE_URL: the database at ${target.describe} is not migrated (${state}): run \`npm run migrate\` first`);
    }
  } finally {
    await client.end().catch(() => {});
  }
}

/** The one line that says why a process could not start. */
export function startupMessage(error: unknown): string {
  if (error instanceof ConfigError) return `Configuration error: ${error.message}`;
  if (error instanceof StartupError || error instanceof EmbeddedSetupError) return error.message;
  const { code, port } = error as { code?: string; port?: number };
  if (code === 'EADDRINUSE') return `PORT: ${port} is already in use by another process`;
  if (code === 'EACCES' && port !== undefined) return `PORT: this process may not listen on ${port}`;
  return `Could not start: ${(error instanceof Error ? error.message : String(error)).split('\n')[0]}`;
}

/** Runs a process's start-up: a failure anywhere in it is one line on stderr and exit code 1. */
export async function startOrExit<T>(start: () => Promise<T>): Promise<T> {
  try {
    return await start();
  } catch (error) {
    process.stderr.write(`${startupMessage(error)}\n`);
    process.exit(1);
  }
}

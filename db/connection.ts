// How every connection to PostgreSQL is made: knex's pools, graphile-worker's pool, the revocation listener, the
// migrations, the CLI, the consistency check and the tests all take their settings from connectionSettings(), so
// a DATABASE_URL means the same thing everywhere, and what it means is what it means to psql.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import pg from 'pg';
import { ConfigError } from '../shared/config.ts';

/** libpq's modes, and node-postgres's `no-verify` (TLS, unverified) which guides for managed servers give. */
const SSL_MODES = ['disable', 'allow', 'prefer', 'require', 'verify-ca', 'verify-full', 'no-verify'] as const;
export type SslMode = (typeof SSL_MODES)[number];

/** What a connection string asks for, read once; `ssl` stays to be decided for prefer and allow. */
export interface ConnectionTarget {
  /** The connection string without its TLS parameters, which are ours to apply. */
  connectionString: string;
  /** host:port/database, for messages: never the password. */
  describe: string;
  /** A Unix socket, over which libpq never uses TLS. */
  socket: boolean;
  sslMode: SslMode;
  /** The TLS options for every mode that uses TLS. */
  tls: ConnectionOptions;
}

type Env = Record<string, string | undefined>;

const TLS_PARAMETERS = ['ssl', 'sslmode', 'sslrootcert', 'sslcert', 'sslkey'];

function readPem(name: string, path: string): string {
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new ConfigError(`DATABASE_URL's ${name} names ${path}, which cannot be read (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`);
  }
}

/**
 * Reads a connection string as libpq does: `sslmode` (else PGSSLMODE, else prefer), `sslrootcert` (else
 * PGSSLROOTCERT; `system` for the usual public authorities), `sslcert` and `sslkey`.
 */
export function connectionTarget(url: string, env: Env = process.env): ConnectionTarget {
  const parsed = URL.parse(url);
  if (!parsed || !['postgres:', 'postgresql:'].includes(parsed.protocol)) {
    throw new ConfigError('DATABASE_URL must be a PostgreSQL URL like postgres://user:password@host:5432/database');
  }
  // An empty value, in the URL or the environment, is no value (as with libpq).
  const parameter = (name: string, envName?: string) => parsed.searchParams.get(name) || (envName && env[envName]) || undefined;
  // node-postgres's own `ssl=true` asks for TLS: read as require.
  const legacy = ['true', '1'].includes(parsed.searchParams.get('ssl') ?? '') ? 'require' : undefined;
  const mode = (parameter('sslmode', 'PGSSLMODE') ?? legacy ?? 'prefer') as SslMode;
  if (!SSL_MODES.includes(mode)) {
    throw new ConfigError(`DATABASE_URL's sslmode (or PGSSLMODE) must be one of ${SSL_MODES.join(', ')}, got "${mode}"`);
  }
  const rootCert = parameter('sslrootcert', 'PGSSLROOTCERT');
  const cert = parameter('sslcert');
  const key = parameter('sslkey');
  const tls: ConnectionOptions = {
    ...(cert && { cert: readPem('sslcert', cert) }),
    ...(key && { key: readPem('sslkey', key) }),
  };
  // libpq: `require` with a root certificate verifies the chain, as verify-ca does.
  const verify = mode === 'verify-full' || mode === 'verify-ca' || (mode === 'require' && rootCert !== undefined);
  if (verify) {
    if (rootCert && rootCert !== 'system') tls.ca = readPem('sslrootcert', rootCert);
    // verify-ca checks who signed the certificate, not the name it is for.
    if (mode !== 'verify-full') tls.checkServerIdentity = () => undefined;
  } else {
    tls.rejectUnauthorized = false;
  }
  for (const name of TLS_PARAMETERS) parsed.searchParams.delete(name);
  const host = parsed.searchParams.get('host') ?? parsed.hostname;
  return {
    connectionString: parsed.toString(),
    describe: `${host || 'localhost'}:${parsed.port || 5432}${parsed.pathname}`,
    socket: host.startsWith('/'),
    sslMode: mode,
    tls,
  };
}

const NO_TLS_OFFERED = 'The server does not support SSL connections';

/** Whether the server answers a request for TLS with no: the one failure prefer and allow go on without TLS. */
export const isNoTlsOffered = (error: unknown): boolean => (error as Error | undefined)?.message === NO_TLS_OFFERED;

const decided = new Map<string, Promise<ConnectionOptions | false>>();

/**
 * prefer and allow use TLS when the server offers it, unverified: asked once per server and process, by a
 * connection that then closes. A failure is not remembered, so a server that was down is asked again.
 */
function preferTls(target: ConnectionTarget, timeoutMs: number): Promise<ConnectionOptions | false> {
  const known = decided.get(target.connectionString);
  if (known) return known;
  const asking = (async () => {
    const client = new pg.Client({ connectionString: target.connectionString, ssl: target.tls, connectionTimeoutMillis: timeoutMs });
    client.on('error', () => {});
    try {
      await client.connect();
      return target.tls;
    } catch (error) {
      if (isNoTlsOffered(error)) return false as const;
      throw error;
    } finally {
      await client.end().catch(() => {});
    }
  })();
  decided.set(target.connectionString, asking);
  asking.catch(() => decided.delete(target.connectionString));
  return asking;
}

/** The TLS part of a connection's settings: false, or the options of tls.connect. */
async function tlsFor(target: ConnectionTarget, timeoutMs: number): Promise<ConnectionOptions | false> {
  if (target.sslMode === 'disable') return false;
  if (target.sslMode === 'prefer' || target.sslMode === 'allow') {
    return target.socket ? false : preferTls(target, timeoutMs);
  }
  return target.tls;
}

/** Everything node-postgres needs for one connection to `url`, TLS decided as psql would. */
export async function connectionSettings(url: string, options: { timeoutMs?: number } = {}): Promise<pg.ClientConfig> {
  const target = connectionTarget(url);
  return { connectionString: target.connectionString, ssl: await tlsFor(target, options.timeoutMs ?? 5000) };
}

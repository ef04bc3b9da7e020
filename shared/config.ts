// The environment is read here, once, at start-up. Every other module receives a Config.

export interface Config {
  /** Absent: `npm start` and `npm test` start an embedded PostgreSQL instead. */
  databaseUrl: string | undefined;
  port: number;
  host: string | undefined;
  logLevel: string;
  rateLimitPerKey: number;
  rateLimitPerIp: number;
  rateLimitWindowMs: number;
  trustProxy: boolean;
  requireHttps: boolean;
  bodyLimitBytes: number;
  dbPoolMax: number;
  shutdownTimeoutMs: number;
  workerConcurrency: number;
  embeddedPgDir: string;
  embeddedPgPort: number;
}

export class ConfigError extends Error {}

type Env = Record<string, string | undefined>;

function readInt(env: Env, name: string, fallback: number, min = 1): number {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min) {
    throw new ConfigError(`${name} must be an integer >= ${min}, got "${raw}"`);
  }
  return value;
}

function readBool(env: Env, name: string, fallback: boolean): boolean {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (['true', '1', 'yes'].includes(raw.toLowerCase())) return true;
  if (['false', '0', 'no'].includes(raw.toLowerCase())) return false;
  throw new ConfigError(`${name} must be true or false, got "${raw}"`);
}

function readString(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env = process.env): Config {
  const logLevel = readString(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  return Object.freeze({
    databaseUrl: readString(env, 'DATABASE_URL'),
    port: readInt(env, 'PORT', 3000, 0),
    host: readString(env, 'HOST'),
    logLevel,
    rateLimitPerKey: readInt(env, 'RATE_LIMIT_PER_KEY', 100),
    rateLimitPerIp: readInt(env, 'RATE_LIMIT_PER_IP', 20),
    rateLimitWindowMs: readInt(env, 'RATE_LIMIT_WINDOW_MS', 60_000),
    trustProxy: readBool(env, 'TRUST_PROXY', false),
    requireHttps: readBool(env, 'REQUIRE_HTTPS', false),
    bodyLimitBytes: readInt(env, 'BODY_LIMIT_BYTES', 1024 * 1024),
    dbPoolMax: readInt(env, 'DB_POOL_MAX', 10),
    shutdownTimeoutMs: readInt(env, 'SHUTDOWN_TIMEOUT_MS', 10_000),
    workerConcurrency: readInt(env, 'WORKER_CONCURRENCY', 5),
    embeddedPgDir: readString(env, 'EMBEDDED_PG_DIR') ?? '.data/postgres',
    embeddedPgPort: readInt(env, 'EMBEDDED_PG_PORT', 54329),
  });
}

/** Loads the config or exits with the reason: a process with a bad environment must not start. */
export function loadConfigOrExit(env: Env = process.env): Config {
  try {
    return loadConfig(env);
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    process.stderr.write(`Configuration error: ${error.message}\n`);
    process.exit(1);
  }
}

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
  /** Where keys' requests are counted: `postgres`, shared by every web process, or `memory`, each process its own. */
  rateLimitStore: 'postgres' | 'memory';
  trustProxy: boolean;
  /**
   * How many proxies in front of the app append to X-Forwarded-For (1 on Heroku): the client is the entry that
   * many from the end. Entries before it are written by the client and never believed.
   */
  trustProxyHops: number;
  /** Requests per window per client IP to the routes that need no key (/health, the docs). */
  rateLimitPublicPerIp: number;
  requireHttps: boolean;
  bodyLimitBytes: number;
  /** The whole request, headers and body, must arrive within this; a slower client is answered 408 and cut off. */
  requestTimeoutMs: number;
  dbPoolMax: number;
  shutdownTimeoutMs: number;
  workerConcurrency: number;
  /** Of a worker's slots, how many deliveries to one receiver origin may hold at once. */
  webhookMaxPerOrigin: number;
  embeddedPgDir: string;
  embeddedPgPort: number;
  /**
   * Encrypts what is kept secret at rest: webhook signing secrets and the stored answers of Idempotency-Keys
   * (32 bytes). Required by web and worker; `npm start` makes one.
   */
  encryptionKey: Buffer | undefined;
  webhookTimeoutMs: number;
  /**
   * Where clients reach the API (`https://api.example.com`): `Link` headers are absolute under it. Absent, they
   * are relative to the API's address, never built from the request's Host header.
   */
  publicUrl: string | undefined;
  /** Development and tests only: http:// and private addresses for webhook receivers. */
  allowInsecureWebhookUrls: boolean;
  /** The ports webhook receivers may listen on. */
  webhookAllowedPorts: number[];
  /** Set, GET /metrics answers requests bearing it (`Authorization: Bearer <token>`); unset, there is no /metrics. */
  metricsToken: string | undefined;
  /** Events older than this many days are deleted by the worker (unless a delivery of theirs is still scheduled). */
  eventRetentionDays: number;
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

function readChoice<T extends string>(env: Env, name: string, choices: readonly T[], fallback: T): T {
  const raw = env[name];
  if (raw === undefined || raw === '') return fallback;
  if (!(choices as readonly string[]).includes(raw)) throw new ConfigError(`${name} must be one of ${choices.join(', ')}, got "${raw}"`);
  return raw as T;
}

function readString(env: Env, name: string): string | undefined {
  const raw = env[name];
  return raw === undefined || raw === '' ? undefined : raw;
}

/** 32 bytes, as 64 hex digits or base64. */
function readKey(env: Env, name: string): Buffer | undefined {
  const raw = readString(env, name);
  if (raw === undefined) return undefined;
  const key = /^[0-9a-f]{64}$/i.test(raw) ? Buffer.from(raw, 'hex') : Buffer.from(raw, 'base64');
  if (key.length !== 32) {
    throw new ConfigError(`${name} must be 32 bytes as 64 hex digits or base64 (make one with: openssl rand -hex 32)`);
  }
  return key;
}

/** ENCRYPTION_KEY, or WEBHOOK_SECRET_KEY, its name until it also encrypted Idempotency-Key answers. */
function readEncryptionKey(env: Env): Buffer | undefined {
  const key = readKey(env, 'ENCRYPTION_KEY');
  const old = readKey(env, 'WEBHOOK_SECRET_KEY');
  if (key && old && !key.equals(old)) {
    throw new ConfigError('ENCRYPTION_KEY and WEBHOOK_SECRET_KEY (its old name) are both set, to different keys: keep ENCRYPTION_KEY only');
  }
  return key ?? old;
}

/** An http(s) URL without credentials, query or fragment (`https://api.example.com`, or with a path prefix), without its trailing slash. */
function readPublicUrl(env: Env, name: string): string | undefined {
  const raw = readString(env, name);
  if (raw === undefined) return undefined;
  const url = URL.parse(raw);
  if (!url || !['http:', 'https:'].includes(url.protocol) || url.username || url.password || url.search || url.hash) {
    throw new ConfigError(`${name} must be where clients reach the service, as https://api.example.com, got "${raw}"`);
  }
  return `${url.origin}${url.pathname.replace(/\/+$/, '')}`;
}

/** A secret someone must send back: long enough not to be guessed. */
function readToken(env: Env, name: string): string | undefined {
  const raw = readString(env, name);
  if (raw !== undefined && (raw.length < 16 || /\s/.test(raw))) {
    throw new ConfigError(`${name} must be at least 16 characters without spaces (make one with: openssl rand -hex 32)`);
  }
  return raw;
}

/** A comma-separated list of TCP ports. */
function readPorts(env: Env, name: string, fallback: number[]): number[] {
  const raw = readString(env, name);
  if (raw === undefined) return fallback;
  const ports = raw.split(',').map((part) => Number(part.trim()));
  if (ports.length === 0 || !ports.every((port) => Number.isInteger(port) && port >= 1 && port <= 65535)) {
    throw new ConfigError(`${name} must be a comma-separated list of ports from 1 to 65535, got "${raw}"`);
  }
  return ports;
}

const LOG_LEVELS = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];

export function loadConfig(env: Env = process.env): Config {
  const logLevel = readString(env, 'LOG_LEVEL') ?? 'info';
  if (!LOG_LEVELS.includes(logLevel)) {
    throw new ConfigError(`LOG_LEVEL must be one of ${LOG_LEVELS.join(', ')}, got "${logLevel}"`);
  }
  // A job mostly waits (on a receiver, on a batched statement): a slot costs a little memory and no connection.
  const workerConcurrency = readInt(env, 'WORKER_CONCURRENCY', 50);
  return Object.freeze({
    databaseUrl: readString(env, 'DATABASE_URL'),
    port: readInt(env, 'PORT', 3000, 0),
    host: readString(env, 'HOST'),
    logLevel,
    rateLimitPerKey: readInt(env, 'RATE_LIMIT_PER_KEY', 100),
    rateLimitPerIp: readInt(env, 'RATE_LIMIT_PER_IP', 20),
    rateLimitWindowMs: readInt(env, 'RATE_LIMIT_WINDOW_MS', 60_000),
    rateLimitStore: readChoice(env, 'RATE_LIMIT_STORE', ['postgres', 'memory'], 'postgres'),
    rateLimitPublicPerIp: readInt(env, 'RATE_LIMIT_PUBLIC_PER_IP', 300),
    trustProxy: readBool(env, 'TRUST_PROXY', false),
    trustProxyHops: readInt(env, 'TRUST_PROXY_HOPS', 1),
    requireHttps: readBool(env, 'REQUIRE_HTTPS', false),
    bodyLimitBytes: readInt(env, 'BODY_LIMIT_BYTES', 1024 * 1024),
    requestTimeoutMs: readInt(env, 'REQUEST_TIMEOUT_MS', 30_000),
    dbPoolMax: readInt(env, 'DB_POOL_MAX', 10),
    shutdownTimeoutMs: readInt(env, 'SHUTDOWN_TIMEOUT_MS', 10_000),
    workerConcurrency,
    // A quarter of the slots by default: it takes four hanging receivers to hold up everyone else.
    webhookMaxPerOrigin: readInt(env, 'WEBHOOK_MAX_PER_ORIGIN', Math.ceil(workerConcurrency / 4)),
    embeddedPgDir: readString(env, 'EMBEDDED_PG_DIR') ?? '.data/postgres',
    embeddedPgPort: readInt(env, 'EMBEDDED_PG_PORT', 54329),
    encryptionKey: readEncryptionKey(env),
    webhookTimeoutMs: readInt(env, 'WEBHOOK_TIMEOUT_MS', 10_000),
    allowInsecureWebhookUrls: readBool(env, 'ALLOW_INSECURE_WEBHOOK_URLS', false),
    webhookAllowedPorts: readPorts(env, 'WEBHOOK_ALLOWED_PORTS', [443, 8443]),
    publicUrl: readPublicUrl(env, 'PUBLIC_URL'),
    metricsToken: readToken(env, 'METRICS_TOKEN'),
    eventRetentionDays: readInt(env, 'EVENT_RETENTION_DAYS', 30),
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

/**
 * `npm run web` and `npm run worker` run against a deployment: they need its database and the key that
 * encrypts secrets at rest. Without them they stop at once, naming what is missing.
 */
export function requireDeploymentSettings(config: Config, command: string): Config & { databaseUrl: string; encryptionKey: Buffer } {
  const { databaseUrl, encryptionKey } = config;
  if (databaseUrl && encryptionKey) return { ...config, databaseUrl, encryptionKey };
  const missing = [!databaseUrl && 'DATABASE_URL', !encryptionKey && 'ENCRYPTION_KEY'].filter(Boolean).join(' and ');
  process.stderr.write(`${missing} ${missing.includes(' and ') ? 'are' : 'is'} not set. \`${command}\` needs them ` +
    '(make a key with: openssl rand -hex 32); `npm start` runs everything locally without either.\n');
  process.exit(1);
}

import type { Knex } from 'knex';
import { pino, type Logger } from 'pino';

export type { Logger };

// Keys, secrets and Authorization values must never reach the logs, whatever object carries them.
const REDACT_PATHS = [
  'req.headers["x-api-key"]',
  'req.headers.authorization',
  'req.headers.cookie',
  'headers["x-api-key"]',
  'headers.authorization',
  'key',
  'secret',
  '*.key',
  '*.secret',
  '*.apiKey',
  '*.password',
];

export function createLogger(level: string, name?: string, destination?: NodeJS.WritableStream): Logger {
  const options = { level, name, redact: { paths: REDACT_PATHS, censor: '[redacted]' } };
  return destination ? pino(options, destination) : pino(options);
}

/** knex's own warnings (a pooled connection that died with the database, say) as JSON lines, not console text. */
export function toKnexLogger(logger: Logger): Knex.Logger {
  const db = logger.child({ component: 'knex' });
  return {
    warn: (message) => db.warn(String(message)),
    error: (message) => db.error(String(message)),
    debug: (message) => db.debug(String(message)),
    deprecate: (method, alternative) => db.warn(`${method} is deprecated: use ${alternative}`),
  };
}

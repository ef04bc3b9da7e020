import knexFactory, { type Knex } from 'knex';
import pg from 'pg';
import type { Logger } from '../shared/logger.ts';
import { connectionSettings } from './connection.ts';
import { connectionTypes } from './timestamps.ts';

// pg hands numeric and bigint back as strings. Quantities, money and stock levels are numeric(20,6) bounded to
// 15 significant digits (inputs by their schemas, levels by moveStock), so Number() is exact here; arithmetic on
// them runs in SQL or in exact millionths (shared/decimal.ts).
pg.types.setTypeParser(pg.types.builtins.NUMERIC, (value) => Number(value));
pg.types.setTypeParser(pg.types.builtins.INT8, (value) => Number(value));
// A date column is a calendar date: as a JS Date it would shift with the server's time zone.
pg.types.setTypeParser(pg.types.builtins.DATE, (value) => value);

/**
 * How long a request waits for a database connection (a new one, or a free one from the pool) before it gives
 * up: with PostgreSQL down or overloaded, callers get a 503 in seconds instead of hanging for knex's default 60 s.
 */
export const CONNECT_TIMEOUT_MS = 2000;

/** knex's own warnings (a pooled connection that died with the database, say) as JSON lines, not console text. */
function knexLogger(logger: Logger): Knex.Logger {
  const db = logger.child({ component: 'knex' });
  return {
    warn: (message) => db.warn(String(message)),
    error: (message) => db.error(String(message)),
    debug: (message) => db.debug(String(message)),
    deprecate: (method, alternative) => db.warn(`${method} is deprecated: use ${alternative}`),
  };
}

export function createDb(connectionString: string, poolMax = 10, logger?: Logger): Knex {
  return knexFactory({
    client: 'pg',
    // Timestamps arrive as ISO strings (db/timestamps.ts), from text that UTC keeps in one form.
    // A function, called at the first connection: whether to use TLS may take asking the server (db/connection.ts).
    connection: async () => ({
      ...await connectionSettings(connectionString, { timeoutMs: CONNECT_TIMEOUT_MS }),
      application_name: 'stockroom', connectionTimeoutMillis: CONNECT_TIMEOUT_MS, options: '-c TimeZone=UTC', types: connectionTypes,
    }),
    pool: { min: 0, max: poolMax },
    acquireConnectionTimeout: CONNECT_TIMEOUT_MS,
    log: logger && knexLogger(logger),
  });
}

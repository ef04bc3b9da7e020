import type { Knex } from 'knex';
import pg from 'pg';
import { eventually } from './eventually.ts';

/**
 * The statements the test process sends to PostgreSQL while `run` runs, but those of the key lookup and the rate
 * limit: run it in a serial test, so that every statement seen is the request's.
 */
export async function statementsOf(run: () => Promise<unknown>): Promise<string[]> {
  const texts: string[] = [];
  const query = pg.Client.prototype.query;
  pg.Client.prototype.query = function (this: pg.Client, config: unknown, ...rest: unknown[]) {
    texts.push(typeof config === 'string' ? config : (config as { text: string }).text);
    return (query as (...args: unknown[]) => unknown).call(this, config, ...rest);
  } as typeof query;
  try {
    await run();
  } finally {
    pg.Client.prototype.query = query;
  }
  return texts.filter((text) => !/api_keys|rate_limits/.test(text));
}

/** Whether a statement of the test's database waits for a lock within a while: a request blocked by a held row. */
export const waitsForLock = (db: Knex): Promise<boolean> => eventually(async () => (await db.raw(`select 1 from pg_stat_activity
  where datname = current_database() and wait_event_type = 'Lock'`)).rows.length === 1);

import { runMigrations as runWorkerMigrations } from 'graphile-worker';
import type { Knex } from 'knex';
import pg from 'pg';
import { DISPATCH_EVENT_TASK } from '../../shared/events.ts';
import { createLogger } from '../../shared/logger.ts';
import { toWorkerLogger } from '../../shared/worker-logger.ts';
import { connectionSettings } from '../connection.ts';
import { createDb } from '../knex.ts';
import * as foundation from './001_foundation.ts';
import * as stock from './002_stock.ts';
import * as salesOrders from './003_sales_orders.ts';
import * as purchasing from './004_purchasing.ts';
import * as webhooks from './005_webhooks.ts';
import * as idempotency from './006_idempotency.ts';
import * as deliveryKinds from './007_delivery_kinds.ts';
import * as listIndexes from './008_list_indexes.ts';
import * as deliveryForeignKeys from './009_delivery_foreign_keys.ts';
import * as levelMaximum from './010_level_maximum.ts';
import * as reservations from './011_reservations.ts';
import * as partialFlows from './012_partial_flows.ts';
import * as stockCounts from './013_stock_counts.ts';
import * as rateLimits from './014_rate_limits.ts';
import * as eventRetention from './015_event_retention.ts';
import * as oneStatementWrites from './016_one_statement_writes.ts';
import * as statementStops from './017_statement_stops.ts';
import * as hotPathKeys from './018_hot_path_keys.ts';
import * as orderNumberSequences from './019_order_number_sequences.ts';
import * as levelLocks from './020_level_locks.ts';

interface Migration {
  up(knex: Knex): Promise<void>;
  down(knex: Knex): Promise<void>;
}

// Listed explicitly rather than globbed from disk: the order is visible and the loader never guesses extensions.
const MIGRATIONS: Record<string, Migration> = {
  '001_foundation': foundation,
  '002_stock': stock,
  '003_sales_orders': salesOrders,
  '004_purchasing': purchasing,
  '005_webhooks': webhooks,
  '006_idempotency': idempotency,
  '007_delivery_kinds': deliveryKinds,
  '008_list_indexes': listIndexes,
  '009_delivery_foreign_keys': deliveryForeignKeys,
  '010_level_maximum': levelMaximum,
  '011_reservations': reservations,
  '012_partial_flows': partialFlows,
  '013_stock_counts': stockCounts,
  '014_rate_limits': rateLimits,
  '015_event_retention': eventRetention,
  '016_one_statement_writes': oneStatementWrites,
  '017_statement_stops': statementStops,
  '018_hot_path_keys': hotPathKeys,
  '019_order_number_sequences': orderNumberSequences,
  '020_level_locks': levelLocks,
};

/** Every migration of this version, in order: what `knex_migrations` lists once the database is migrated. */
export const MIGRATION_NAMES = Object.keys(MIGRATIONS);

const source: Knex.MigrationSource<string> = {
  getMigrations: async () => MIGRATION_NAMES,
  getMigrationName: (name) => name,
  getMigration: async (name) => {
    const migration = MIGRATIONS[name];
    if (!migration) throw new Error(`Unknown migration ${name}`);
    return migration;
  },
};

/**
 * graphile-worker's add_job and add_jobs are PL/pgSQL: after five calls on a connection PostgreSQL may keep a
 * generic plan for them, whose update of the jobs that hold a key scans the whole queue. Every enqueue then costs
 * in proportion to the jobs waiting: 10 ms at 50,000 (a backlog while the worker is down), against 1 ms with a plan
 * made for the call. Set again after each of graphile-worker's migrations, which may replace the functions.
 */
const PLAN_EVERY_ENQUEUE = `do $$
  declare f regprocedure;
  begin
    for f in select p.oid::regprocedure from pg_proc p join pg_namespace n on n.oid = p.pronamespace
             where n.nspname = 'graphile_worker' and p.proname in ('add_job', 'add_jobs') loop
      execute format('alter function %s set plan_cache_mode = force_custom_plan', f);
    end loop;
  end $$`;

/**
 * The dispatch task's row in graphile-worker's task table, which add_jobs would create on first use: events' fan-out
 * jobs are inserted by the statements that record the events (see eventCtes), which take its id.
 */
const ENSURE_DISPATCH_TASK = `insert into graphile_worker._private_tasks (identifier) values ('${DISPATCH_EVENT_TASK}') on conflict do nothing`;

/** Brings the database to the latest schema: ours through knex, then graphile-worker's, so the web process can enqueue before any worker has run. */
export async function migrateLatest(connectionString: string): Promise<string[]> {
  const db = createDb(connectionString, 1);
  try {
    const [, applied] = (await db.migrate.latest({ migrationSource: source })) as [number, string[]];
    const pgPool = new pg.Pool({ ...await connectionSettings(connectionString), max: 1 });
    // A connection's failure reaches the statement that uses it; without listeners it would end the process.
    pgPool.on('error', () => {});
    pgPool.on('connect', (client) => client.on('error', () => {}));
    try {
      await runWorkerMigrations({ pgPool, logger: toWorkerLogger(createLogger('warn', 'migrate')) });
    } finally {
      await pgPool.end();
    }
    await db.raw(PLAN_EVERY_ENQUEUE);
    await db.raw(ENSURE_DISPATCH_TASK);
    return applied;
  } finally {
    await db.destroy();
  }
}

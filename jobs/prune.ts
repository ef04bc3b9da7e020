// Scheduled clean-ups: old rows go in batches, so that no statement holds locks for long.
import type { Task } from 'graphile-worker';
import type { Knex } from 'knex';
import type { Db } from '../db/knex.ts';

const BATCH = 5000;

export interface PruneSpec {
  table: string;
  /** The columns that identify a row. */
  key: string[];
  /** Narrows a query of `table` to the rows that are due to go. */
  due: (query: Knex.QueryBuilder) => Knex.QueryBuilder;
  /** "delivery log rows older than 30 days": logged with how many went. */
  what: string;
}

export function makePrune(db: Db, spec: PruneSpec): Task {
  return async (_payload, helpers) => {
    let total = 0;
    for (;;) {
      const deleted = await db(spec.table)
        .whereIn(spec.key, spec.due(db(spec.table).select(spec.key)).limit(BATCH))
        .delete();
      total += deleted;
      if (deleted < BATCH) break;
    }
    if (total) helpers.logger.info(`pruned ${total} ${spec.what}`);
  };
}

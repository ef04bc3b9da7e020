// Scheduled clean-ups: old rows go in batches, so that no statement holds locks for long.
import type { Task } from 'graphile-worker';
import type { Knex } from 'knex';

const BATCH = 5000;

export interface PruneSpec {
  /** The task's identifier, `<what>__prune`, which its file is named after. */
  task: string;
  /** When it runs, as a crontab schedule (UTC). */
  schedule: string;
  table: string;
  /** The columns that identify a row. */
  key: string[];
  /** Narrows a query of `table` to the rows that are due to go. */
  due: (query: Knex.QueryBuilder) => Knex.QueryBuilder;
  /** "delivery log rows older than 30 days": logged with how many went. */
  what: string;
}

export interface Prune {
  task: string;
  schedule: string;
  run: Task;
}

export function prune(db: Knex, spec: PruneSpec): Prune {
  const run: Task = async (_payload, helpers) => {
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
  return { task: spec.task, schedule: spec.schedule, run };
}

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

/** Deletes up to `limit` rows, saying how many went and whether there may be more. */
export type DeleteBatch = (limit: number) => Promise<{ deleted: number; more: boolean }>;

/** A clean-up that deletes in batches until none may be left; `start` gives each run its batches (and any cursor). */
export function pruneInBatches(task: string, schedule: string, what: string, start: () => DeleteBatch, limit = BATCH): Prune {
  const run: Task = async (_payload, helpers) => {
    const deleteBatch = start();
    let total = 0;
    for (let more = true; more;) {
      const batch = await deleteBatch(limit);
      total += batch.deleted;
      more = batch.more;
    }
    if (total) helpers.logger.info(`pruned ${total} ${what}`);
  };
  return { task, schedule, run };
}

export function prune(db: Knex, spec: PruneSpec): Prune {
  return pruneInBatches(spec.task, spec.schedule, spec.what, () => async (limit) => {
    const deleted = await db(spec.table).whereIn(spec.key, spec.due(db(spec.table).select(spec.key)).limit(limit)).delete();
    return { deleted, more: deleted === limit };
  });
}

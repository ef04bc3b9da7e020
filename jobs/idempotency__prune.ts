// An hourly job: Idempotency-Keys past their 24 hours go, in batches so that no statement holds locks for long.
// Correctness does not wait for it: an expired key is treated as unused the moment it expires.
import type { Task } from 'graphile-worker';
import type { Db } from '../db/knex.ts';

const BATCH = 5000;

export function makePruneIdempotencyKeys(db: Db): Task {
  return async (_payload, helpers) => {
    let total = 0;
    for (;;) {
      const deleted = await db('idempotency_keys')
        .whereIn(['account_id', 'key'], db('idempotency_keys').select('account_id', 'key').where('expires_at', '<=', db.fn.now()).limit(BATCH))
        .delete();
      total += deleted;
      if (deleted < BATCH) break;
    }
    if (total) helpers.logger.info(`pruned ${total} expired Idempotency-Keys`);
  };
}

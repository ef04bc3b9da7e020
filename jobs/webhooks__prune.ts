// A daily job: delivery log rows older than 30 days go, in batches so that no statement holds locks for long.
import type { Task } from 'graphile-worker';
import type { Db } from '../db/knex.ts';

export const DELIVERY_LOG_DAYS = 30;
const BATCH = 5000;

export function makePruneDeliveries(db: Db): Task {
  return async (_payload, helpers) => {
    let total = 0;
    for (;;) {
      const deleted = await db('webhook_deliveries')
        .whereIn('id', db('webhook_deliveries').select('id')
          .where('created_at', '<', db.raw(`now() - interval '${DELIVERY_LOG_DAYS} days'`)).limit(BATCH))
        .delete();
      total += deleted;
      if (deleted < BATCH) break;
    }
    if (total) helpers.logger.info(`pruned ${total} delivery log rows older than ${DELIVERY_LOG_DAYS} days`);
  };
}

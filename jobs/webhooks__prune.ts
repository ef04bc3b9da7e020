// A daily job: delivery log rows older than 30 days go.
import type { Db } from '../db/knex.ts';
import { makePrune } from './prune.ts';

export const DELIVERY_LOG_DAYS = 30;

export const makePruneDeliveries = (db: Db) => makePrune(db, {
  table: 'webhook_deliveries',
  key: ['id'],
  due: (query) => query.where('created_at', '<', db.raw(`now() - make_interval(days => ?)`, [DELIVERY_LOG_DAYS])),
  what: `delivery log rows older than ${DELIVERY_LOG_DAYS} days`,
});

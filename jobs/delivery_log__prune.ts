// Daily: delivery log rows older than 30 days go.
import type { Knex } from 'knex';
import { prune } from './prune.ts';

export const DELIVERY_LOG_DAYS = 30;

export const pruneDeliveryLog = (db: Knex) => prune(db, {
  task: 'delivery_log__prune',
  schedule: '15 4 * * *',
  table: 'webhook_deliveries',
  key: ['id'],
  due: (query) => query.where('created_at', '<', db.raw(`now() - make_interval(days => ?)`, [DELIVERY_LOG_DAYS])),
  what: `delivery log rows older than ${DELIVERY_LOG_DAYS} days`,
});

// Hourly: Idempotency-Keys past their 24 hours go. Correctness does not wait for it: an expired key is treated as
// unused the moment it expires.
import type { Knex } from 'knex';
import { prune } from './prune.ts';

export const pruneIdempotencyKeys = (db: Knex) => prune(db, {
  task: 'idempotency_keys__prune',
  schedule: '40 * * * *',
  table: 'idempotency_keys',
  key: ['account_id', 'key'],
  due: (query) => query.where('expires_at', '<=', db.fn.now()),
  what: 'expired Idempotency-Keys',
});

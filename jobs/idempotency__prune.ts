// An hourly job: Idempotency-Keys past their 24 hours go. Correctness does not wait for it: an expired key is
// treated as unused the moment it expires.
import type { Db } from '../db/knex.ts';
import { makePrune } from './prune.ts';

export const makePruneIdempotencyKeys = (db: Db) => makePrune(db, {
  table: 'idempotency_keys',
  key: ['account_id', 'key'],
  due: (query) => query.where('expires_at', '<=', db.fn.now()),
  what: 'expired Idempotency-Keys',
});

// What tests of stock-changing operations assert: the ledger invariant, and the rows a change left behind.
import type { Knex } from 'knex';
import { dispatchJobKey, jobKeySql } from '../../shared/events.ts';

/** For every item and location of the account whose level differs from the sum of its movements: that row. */
export async function ledgerMismatches(db: Knex, accountId: string): Promise<unknown[]> {
  const { rows } = await db.raw(
    `select l.item_id, l.location_id, l.quantity, coalesce(sum(m.quantity), 0) as moved
     from stock_levels l left join stock_movements m
       on m.account_id = l.account_id and m.item_id = l.item_id and m.location_id = l.location_id
     where l.account_id = ? group by l.item_id, l.location_id, l.quantity
     having l.quantity <> coalesce(sum(m.quantity), 0)`, [accountId]);
  return rows;
}

/**
 * Rows the account holds in each table, plus `jobs`: the pending dispatch jobs of its events. A rolled-back
 * change must leave every count as it was.
 */
export async function footprint(db: Knex, accountId: string, tables: string[]): Promise<Record<string, number>> {
  const counts: Record<string, number> = {};
  for (const table of tables) {
    counts[table] = Number((await db(table).where({ account_id: accountId }).count({ n: '*' }).first())!.n);
  }
  const jobs = await db.raw(
    `select count(*)::int as n from graphile_worker.jobs j join events e on j.key = ${jobKeySql(dispatchJobKey, 'e.id')}
     where j.task_identifier = 'events__dispatch' and e.account_id = ?`, [accountId]);
  counts.jobs = jobs.rows[0].n as number;
  return counts;
}

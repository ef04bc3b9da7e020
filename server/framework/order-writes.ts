// An order's operation (a sales order's fulfilment, a purchase order's receipt, any move of its life cycle) as one
// read and one write. The order is read with its version, without a lock; the operation is planned from it (pure);
// the plan is written in one statement with its stock, which locks the order's rows and goes on only if their version
// is still the one read. Else the operation runs again on what changed them: a second operation on an order sees the
// first one's status, as it would have under a lock held across round trips, but no lock is held across one.
import type { Knex } from 'knex';
import { applyStock, type StockOperation, type StockStatementExtension } from '../../db/stock.ts';
import { filledJson, stopOf, stopSql, type Statement } from '../../db/statement.ts';
import { isoTimestampSql } from '../../db/timestamps.ts';
import { NotFoundError } from '../../shared/errors.ts';
import { partRecordCtes, type NewPartRecord, type OrderLine, type PartRecordTables } from './line-parts.ts';

/** Why an order's statement stopped: its rows changed since they were read. */
const STALE = 'the order changed since it was read';

/** An order as an operation reads it: with the version of the rows its operations depend on. */
export interface Versioned {
  id: string;
  version: string;
}

/** What an operation writes besides the stock. */
export interface OrderWrite {
  /** The order's columns it sets besides `updated_at`: SQL expressions by column (`o` the order's row), values placed with `q`. */
  set: (q: Statement) => Record<string, string>;
  /** The record it writes (a receipt, a fulfilment), if any. */
  part?: { tables: PartRecordTables; record: NewPartRecord<OrderLine> };
  /** The order as the API returns it after the operation, `now` standing for the statement's time (its updatedAt, the record's createdAt). */
  record: unknown;
  /** A string nobody can have sent (a new uuid), wherever `record` holds the statement's time. */
  now: string;
  event?: string;
}

export interface OrderTable {
  table: string;
  noun: string;
  /**
   * Rows besides the order's own that its version covers (a sales order's open reservations): CTEs that lock them,
   * after the order's row (`po`) and in the order every writer of them locks them, and their part of the version (what
   * the read appends to the row's `xmin` after a `/`), over those CTEs.
   */
  also?: (q: Statement, accountId: string, orderId: string) => { ctes: string[]; version: string };
}

/**
 * The operation's CTEs in its stock statement: the order's rows locked, and the statement stopped if their version
 * is no longer the one read (a guard, so before the levels are checked: a stale read never becomes a wrong 409);
 * then the record, the order's row and its event. The order after it comes back as `record`.
 */
function orderCtes(q: Statement, auth: { accountId: string; userId: string }, order: Versioned, table: OrderTable, write: OrderWrite): StockStatementExtension {
  const a = q.param(auth.accountId, 'uuid');
  const o = q.param(order.id, 'uuid');
  const also = table.also?.(q, auth.accountId, order.id);
  const version = also ? `(select version from po) || '/' || (${also.version})` : '(select version from po)';
  const current = `${version} = ${q.param(order.version, 'text')}`;
  const gate = `${current} and not exists (select 1 from refused)`;
  const set = Object.entries(write.set(q)).map(([column, value]) => `${column} = ${value}, `).join('');
  const record = filledJson(q, write.record, { [write.now]: isoTimestampSql('(select updated_at from ou)') });
  return {
    ctes: [
      `po as materialized (select id, xmin::text as version from ${table.table} where account_id = ${a} and id = ${o} for update)`,
      ...also?.ctes ?? [],
      ...write.part ? partRecordCtes(q, auth.accountId, auth.userId, write.part.tables, write.part.record, gate) : [],
      `ou as (update ${table.table} o set ${set}updated_at = now()
         where o.account_id = ${a} and o.id = (select id from po) and ${gate}
         returning o.updated_at)`,
    ],
    events: write.event ? `select ${q.param(write.event, 'text')} as type, ${record} as data, 1 as n` : undefined,
    guards: [`(select ${stopSql(q, STALE, "'{}'::jsonb")} where not (${current})) as stale`],
    columns: [`${record} as record`],
  };
}

/**
 * Reads the order (`read`; none is a 404 naming `noun`), plans the operation on it and writes the plan in one
 * statement, until the order is still as read when the statement locks it. Answers the order after it, and the plan.
 */
export async function writeOrder<Order extends Versioned, Plan extends { stock: StockOperation; write: OrderWrite }, Answer>(
  db: Knex,
  table: OrderTable,
  read: () => Promise<Order | undefined>,
  plan: (order: Order) => Plan,
): Promise<{ record: Answer; plan: Plan }> {
  for (;;) {
    const order = await read();
    if (!order) throw new NotFoundError(table.noun);
    const planned = plan(order);
    try {
      const { row } = await applyStock<{ record: Answer }>(db, planned.stock, {
        extend: (q) => orderCtes(q, planned.stock, order, table, planned.write),
      });
      return { record: row.record, plan: planned };
    } catch (error) {
      if (stopOf(error)?.reason !== STALE) throw error;
    }
  }
}

import { randomUUID } from 'node:crypto';
import type { Knex } from 'knex';
import { applyStock, type ClosingReservation, type NewReservation, type ReservationRow, type StockStatementExtension } from '../../../db/stock.ts';
import { filledJson, rowsJson, stopOf, stopSql, type Statement } from '../../../db/statement.ts';
import { isoTimestampSql } from '../../../db/timestamps.ts';
import { fromMicros, toMicros } from '../../../shared/decimal.ts';
import { orderNumberSequenceSql } from '../../../db/accounts.ts';
import { ConflictError } from '../../../shared/errors.ts';
import { isUuid } from '../../../shared/guards.ts';
import { listOwned, whereId, withChildren, type OwnedRow } from '../../framework/crud.ts';
import { listPartRecords, partLinesJson, withPartRecords, type PartRecordRow, type PartRecordTables } from '../../framework/line-parts.ts';
import type { OrderTable, Versioned } from '../../framework/order-writes.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import type { NewLine } from './lines.ts';
import type { SalesOrderStatus } from './lifecycle.ts';
import type { SalesFulfillment, SalesOrder, SalesOrderLine, SalesOrderListQuery } from './schema.ts';

export interface SalesOrderRow extends OwnedRow {
  sales_order_number: string;
  integration_source_id: string | null;
  customer_id: string;
  status: SalesOrderStatus;
  total: number;
  fulfilled_location_id: string | null;
}

export interface SalesOrderLineRow extends OwnedRow {
  sales_order_id: string;
  position: number;
  item_id: string;
  sku: string;
  quantity: number;
  price: number;
  /** Taken by the order's fulfilments so far. */
  quantity_fulfilled: number;
  /** Held for the line by its open reservations, at any location. */
  quantity_reserved: number;
}

export interface FulfillmentRow extends PartRecordRow {
  sales_order_id: string;
  lines: Array<{ lineItemId: string; itemId: string; quantity: number }>;
}

/** An order with its lines, in position order, and its fulfilments, oldest first. */
export interface SalesOrderWithLines extends SalesOrderRow {
  lines: SalesOrderLineRow[];
  fulfillments: FulfillmentRow[];
}

function toLine(row: SalesOrderLineRow): SalesOrderLine {
  return {
    id: row.id, itemId: row.item_id, sku: row.sku, quantity: row.quantity, price: row.price,
    quantityFulfilled: row.quantity_fulfilled, quantityReserved: row.quantity_reserved,
  };
}

export function toFulfillment(row: FulfillmentRow): SalesFulfillment {
  return {
    id: row.id, salesOrderId: row.sales_order_id, locationId: row.location_id, reference: row.reference, lines: row.lines,
    createdBy: row.created_by, createdAt: row.created_at,
  };
}

export function toSalesOrder(row: SalesOrderWithLines): SalesOrder {
  return {
    id: row.id,
    salesOrderNumber: row.sales_order_number,
    integrationSourceId: row.integration_source_id,
    customerId: row.customer_id,
    status: row.status,
    lineItems: row.lines.map(toLine),
    total: row.total,
    fulfilledLocationId: row.fulfilled_location_id,
    fulfillments: row.fulfillments.map(toFulfillment),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

export const FULFILLMENT_TABLES: PartRecordTables = {
  records: 'sales_fulfillments', lines: 'sales_fulfillment_lines', recordId: 'fulfillment_id', orderId: 'sales_order_id',
  orderLines: 'sales_order_lines', orderLineId: 'sales_order_line_id', done: 'quantity_fulfilled', field: 'lineItemId',
};

/**
 * The lines of several orders, with what each has reserved, and their fulfilments, attached to their orders: two
 * queries whatever their number.
 */
export async function withLines(db: Knex, accountId: string, orders: SalesOrderRow[]): Promise<SalesOrderWithLines[]> {
  const withOrderLines = await withChildren(orders, 'lines', (ids): Promise<SalesOrderLineRow[]> =>
    db('sales_order_lines as l').where('l.account_id', accountId).whereIn('l.sales_order_id', ids)
      .orderBy([{ column: 'l.sales_order_id' }, { column: 'l.position' }])
      .select('l.*', db.raw(`coalesce((select sum(r.quantity) from reservations r
        where r.sales_order_line_id = l.id and r.status = 'open'), 0) as quantity_reserved`)),
  (line) => line.sales_order_id);
  return withPartRecords<SalesOrderRow & { lines: SalesOrderLineRow[] }, FulfillmentRow, 'fulfillments'>(
    db, accountId, withOrderLines, FULFILLMENT_TABLES, 'fulfillments');
}

/** A page of one order's fulfilments. */
export const listFulfillments = (db: Knex, accountId: string, orderId: string, page: PageRequest) =>
  listPartRecords<FulfillmentRow>(db, accountId, FULFILLMENT_TABLES, orderId, page);

/** An order as an operation reads it: with its open reservations, and the version of its row and theirs. */
export type VersionedSalesOrder = SalesOrderWithLines & Versioned & { reservations: ReservationRow[] };

/**
 * The version of an order's open reservations over `rows` (their `id` and `xmin` as `version`): what the read takes
 * and what the write compares it with under the locks, so both must be this one text.
 */
const reservationsVersion = (rows: string) => `(select coalesce(string_agg(v.id::text || '.' || v.version, ',' order by v.id), '') from ${rows} v)`;

/**
 * The order with its lines (each with what it holds reserved), its fulfilments, its open reservations and its
 * version, in one query: what GET answers, and what an operation decides from (no lock: its statement checks the
 * version, which any change to the order's row or to one of its open reservations moves).
 */
export async function findSalesOrder(db: Knex, accountId: string, id: string): Promise<VersionedSalesOrder | undefined> {
  if (!isUuid(id)) return undefined;
  const { rows: [row] } = await db.raw<{ rows: VersionedSalesOrder[] }>(
    `select o.*, o.xmin::text || '/' || ${reservationsVersion(`(select r.id, r.xmin::text as version from reservations r
         where r.account_id = o.account_id and r.sales_order_id = o.id and r.status = 'open')`)} as version,
       ${rowsJson(`(select l.*, coalesce((select sum(r.quantity) from reservations r where r.sales_order_line_id = l.id and r.status = 'open'), 0)
         as quantity_reserved from sales_order_lines l where l.sales_order_id = o.id)`, 'x.position')} as lines,
       ${rowsJson(`(select r.*, ${partLinesJson(FULFILLMENT_TABLES)} as lines from sales_fulfillments r where r.sales_order_id = o.id)`, 'x.created_at, x.id')} as fulfillments,
       ${rowsJson(`(select * from reservations r where r.account_id = o.account_id and r.sales_order_id = o.id and r.status = 'open')`, 'x.id')} as reservations
     from sales_orders o where o.account_id = ? and o.id = ?`,
    [accountId, id],
  );
  return row;
}

/** Sales orders for writeOrder: the version covers the order's open reservations too, locked in id order (as a release locks its one). */
export const SALES_ORDERS: OrderTable = {
  table: 'sales_orders', noun: 'Sales order',
  also: (q, accountId, orderId) => ({
    ctes: [`rl as materialized (select id, xmin::text as version from reservations
      where account_id = ${q.param(accountId, 'uuid')} and sales_order_id = ${q.param(orderId, 'uuid')} and status = 'open' order by id for update)`],
    version: reservationsVersion('rl'),
  }),
};

export async function listSalesOrders(db: Knex, accountId: string, filters: SalesOrderListQuery, page: PageRequest): Promise<SalesOrderWithLines[]> {
  const rows = await listOwned<SalesOrderRow>(db, 'sales_orders', accountId, page, (query) => {
    if (filters.status !== undefined) query.where('status', filters.status);
    whereId(query, 'customer_id', filters.customerId);
    if (filters.integrationSourceId !== undefined) query.where('integration_source_id', filters.integrationSourceId);
  });
  return withLines(db, accountId, rows);
}

export interface NewSalesOrder {
  customerId: string;
  /** Absent: the next `SO-` number of the account. */
  salesOrderNumber?: string | null;
  integrationSourceId?: string | null;
  total: number;
}

/** Why the order inserted nothing: a 409 naming the order that holds its integration id or its number; or whether `number` is taken. */
async function duplicate(db: Knex, accountId: string, order: NewSalesOrder, number: string | null): Promise<ConflictError | boolean> {
  const clashes: Array<Pick<SalesOrderRow, 'id' | 'sales_order_number' | 'integration_source_id'>> = await db('sales_orders')
    .where({ account_id: accountId })
    .where((query) => {
      if (number !== null) query.where('sales_order_number', number);
      if (order.integrationSourceId) query.orWhere('integration_source_id', order.integrationSourceId);
    })
    .select('id', 'sales_order_number', 'integration_source_id');
  // The integration id first: a clash there means the caller is retrying an order it already sent.
  const sameSource = clashes.find((row) => order.integrationSourceId && row.integration_source_id === order.integrationSourceId);
  if (sameSource) {
    return new ConflictError(`A sales order with integrationSourceId "${order.integrationSourceId}" already exists`, {
      existingId: sameSource.id, integrationSourceId: order.integrationSourceId,
    });
  }
  const sameNumber = clashes.find((row) => row.sales_order_number === number);
  if (sameNumber && order.salesOrderNumber) {
    return new ConflictError(`A sales order with salesOrderNumber "${number}" already exists`, { existingId: sameNumber.id, salesOrderNumber: number });
  }
  return sameNumber !== undefined;
}

/**
 * What the order's statement decides, in the order the record has them. Its event is the order as toSalesOrder
 * answers it, with a blank for each (a string no caller can send: the order's id is new) that the statement replaces
 * in the event's text, so that the event keeps the record's key order.
 */
const DECIDED = ['salesOrderNumber', 'createdAt', 'updatedAt'] as const;
const blank = (orderId: string, field: (typeof DECIDED)[number]): string => `${orderId}:${field}`;

/** The lines, each with what it holds reserved once `reserve` is made and `close` closed (reservations of these lines). */
export function linesReserved(
  lines: SalesOrderLineRow[],
  reserve: NewReservation[],
  close: Array<Pick<ClosingReservation, 'row' | 'quantity'>> = [],
): SalesOrderLineRow[] {
  const reserved = new Map(lines.map((line) => [line.id, toMicros(line.quantity_reserved)]));
  for (const { source, quantity } of reserve) if (source.type === 'sales_order') reserved.set(source.lineItemId, reserved.get(source.lineItemId)! + toMicros(quantity));
  for (const { row, quantity } of close) reserved.set(row.sales_order_line_id!, reserved.get(row.sales_order_line_id!)! - toMicros(quantity));
  return lines.map((line) => ({ ...line, quantity_reserved: fromMicros(reserved.get(line.id)!) }));
}

/** A new order's lines, under ids of their own, as they will be stored, nothing reserved yet. */
export function newLineRows(accountId: string, orderId: string, lines: NewLine[]): SalesOrderLineRow[] {
  return lines.map((line, position) => ({
    id: randomUUID(), account_id: accountId, sales_order_id: orderId, position, item_id: line.itemId, sku: line.sku,
    quantity: line.quantity, price: line.price, quantity_fulfilled: 0, quantity_reserved: 0,
    created_at: blank(orderId, 'createdAt'), updated_at: blank(orderId, 'updatedAt'),
  }));
}

/** Why a create stopped (with a ClashDetail): its order inserted nothing, and its reservations were undone. */
const CLASH = 'the sales order clashed with another';

interface ClashDetail {
  /** The number the order tried; null when it drew none (its integrationSourceId was taken already). */
  number: string | null;
}

/**
 * The order's CTEs in its stock statement: its number, row, lines, its event, and a stop when it inserted nothing.
 * A generated number is drawn from the account's sequence only when nothing refused the create and no order holds
 * its integrationSourceId yet: a refused create, or a retry of one already made, uses no number up.
 */
function orderStatement(q: Statement, accountId: string, order: NewSalesOrder, draft: SalesOrder, lines: SalesOrderLineRow[]): StockStatementExtension {
  const a = q.param(accountId, 'uuid');
  const given = q.param(order.salesOrderNumber ?? null, 'text');
  const source = q.param(order.integrationSourceId ?? null, 'text');
  const data = filledJson(q, draft, {
    [blank(draft.id, 'salesOrderNumber')]: 'o.sales_order_number',
    [blank(draft.id, 'createdAt')]: isoTimestampSql('o.created_at'),
    [blank(draft.id, 'updatedAt')]: isoTimestampSql('o.updated_at'),
  });
  return {
    ctes: [
      `num as (select ${given} as number where ${given} is not null
         union all
         select 'SO-' || case when value >= 1000000 then value::text else lpad(value::text, 6, '0') end
         from (select nextval(${orderNumberSequenceSql(a)}) as value
           where ${given} is null and not exists (select 1 from refused)
             and not exists (select 1 from sales_orders x where x.account_id = ${a} and x.integration_source_id = ${source})) v)`,
      `o as (insert into sales_orders (id, account_id, sales_order_number, integration_source_id, customer_id, total)
         select ${q.param(draft.id, 'uuid')}, ${a}, num.number, ${source},
           ${q.param(order.customerId, 'uuid')}, ${q.param(String(order.total), 'numeric')} from num
         where not exists (select 1 from refused)
         on conflict do nothing
         returning *)`,
      `ln as (insert into sales_order_lines (id, account_id, sales_order_id, position, item_id, sku, quantity, price)
         select l.id, ${a}, o.id, l.position, l.item_id, l.sku, l.quantity, l.price
         from o, unnest(${q.column(lines, (line) => line.id, 'uuid')}, ${q.column(lines, (line) => line.position, 'integer')},
           ${q.column(lines, (line) => line.item_id, 'uuid')}, ${q.column(lines, (line) => line.sku, 'text')},
           ${q.column(lines, (line) => String(line.quantity), 'numeric')}, ${q.column(lines, (line) => String(line.price), 'numeric')})
           as l(id, position, item_id, sku, quantity, price))`,
    ],
    events: `select 'sales_order.created' as type, ${data} as data, 1 as n from o`,
    columns: [
      `(select ${stopSql(q, CLASH, "jsonb_build_object('number', (select number from num))")} where not exists (select 1 from o)) as clash`,
      `(select e.data from e where e.type = 'sales_order.created') as created`,
    ],
  };
}

/**
 * Creates the order in one statement (applyStock's, with `reserve`, the reservations of its lines, if any): its
 * lines, its number drawn from the account's sequence when the caller sent none (`SO-000042` from 42), its row and
 * its `sales_order.created` event. Both unique keys are checked by the insert itself (`on conflict do nothing`: a
 * racing identical create waits for the first to commit, then inserts nothing), and an order that inserted nothing
 * stops the statement, undoing its reservations, to answer a 409 naming the existing order. A generated number a
 * caller already used explicitly is skipped: the create runs again with the next one.
 */
export async function createSalesOrder(
  db: Knex,
  auth: { accountId: string; userId: string },
  id: string,
  order: NewSalesOrder,
  lines: SalesOrderLineRow[],
  reserve: NewReservation[],
): Promise<SalesOrder> {
  const draft = toSalesOrder({
    id, account_id: auth.accountId, sales_order_number: blank(id, 'salesOrderNumber'), integration_source_id: order.integrationSourceId ?? null,
    customer_id: order.customerId, status: 'open', total: order.total, fulfilled_location_id: null,
    created_at: blank(id, 'createdAt'), updated_at: blank(id, 'updatedAt'),
    lines: linesReserved(lines, reserve), fulfillments: [],
  });
  for (;;) {
    try {
      const { row } = await applyStock<{ created: SalesOrder }>(db, { ...auth, reserve }, {
        extend: (q) => orderStatement(q, auth.accountId, order, draft, lines),
      });
      return row.created;
    } catch (error) {
      const stop = stopOf(error);
      if (stop?.reason !== CLASH) throw error;
      const tried = stop.detail as ClashDetail;
      const taken = await duplicate(db, auth.accountId, order, tried.number);
      if (taken instanceof ConflictError) throw taken;
      // A number of the caller's or an integrationSourceId taken by an order that is gone again (its create failed):
      // the caller may retry. A generated number taken: the next one.
      if (order.salesOrderNumber || !taken) throw new ConflictError('The sales order conflicted with a concurrent change; retry it');
    }
  }
}

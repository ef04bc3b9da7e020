import type { Knex } from 'knex';
import { recordEvents } from '../../../db/events.ts';
import { isoTimestampSql } from '../../../db/timestamps.ts';
import { ConflictError } from '../../../shared/errors.ts';
import { findOwned, listOwned, whereId, withChildren, type OwnedRow } from '../../framework/crud.ts';
import { listPartRecords, withPartRecords, type PartRecordRow, type PartRecordTables } from '../../framework/line-parts.ts';
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

export async function findSalesOrder(db: Knex, accountId: string, id: string): Promise<SalesOrderWithLines | undefined> {
  const row = await findOwned<SalesOrderRow>(db, 'sales_orders', accountId, id);
  return row && (await withLines(db, accountId, [row]))[0];
}

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

async function duplicate(trx: Knex.Transaction, accountId: string, order: NewSalesOrder, number: string): Promise<ConflictError | undefined> {
  const clashes: Array<Pick<SalesOrderRow, 'id' | 'sales_order_number' | 'integration_source_id'>> = await trx('sales_orders')
    .where({ account_id: accountId })
    .where((query) => {
      query.where('sales_order_number', number);
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
  return undefined;
}

/**
 * What the order's own statement decides, in the order the record has them. Its recorded event holds a blank for
 * each (a string no caller can send: the order's id is new), which that statement replaces in the stored text, so
 * that the event keeps the record's key order.
 */
const DECIDED = ['salesOrderNumber', 'createdAt', 'updatedAt'] as const;
const blank = (orderId: string, field: (typeof DECIDED)[number]): string => `${orderId}:${field}`;

/**
 * Inserts the order. Both unique keys are checked by the insert itself (`on conflict do nothing`: a racing identical
 * create waits for the first to commit, then inserts nothing), so a duplicate is a 409 naming the existing order
 * and never a database error inside the transaction. Without a number of the caller's, the account's counter is
 * bumped in the same statement, `SO-000042` from 42: its row stays locked until the commit, so that concurrent
 * creates take consecutive numbers and a rolled-back create gives its number back. A generated number a caller
 * already used explicitly is skipped. The same statement fills in the order's recorded `sales_order.created` event
 * (DECIDED), so that nothing but the commit follows the counter.
 */
async function insertOrderRow(trx: Knex.Transaction, accountId: string, id: string, order: NewSalesOrder, eventId: string): Promise<SalesOrderRow> {
  for (;;) {
    const { rows: [row] } = await trx.raw<{ rows: Array<SalesOrderRow & { tried: string }> }>(
      `with bumped as (
         insert into account_counters as c (account_id, name, value) select ?::uuid, 'sales_order', 1 where ?::text is null
         on conflict (account_id, name) do update set value = c.value + 1, updated_at = now()
         returning value
       ), n as (
         select ?::text as given where ?::text is not null
         union all
         select 'SO-' || case when value >= 1000000 then value::text else lpad(value::text, 6, '0') end from bumped
       ), o as (
         insert into sales_orders (id, account_id, sales_order_number, integration_source_id, customer_id, total)
         select ?::uuid, ?::uuid, n.given, ?, ?::uuid, ?::numeric from n
         on conflict do nothing
         returning *
       ), event as (
         update events e set data = replace(replace(replace(e.data::text,
           ?, to_json(o.sales_order_number)::text),
           ?, to_json(${isoTimestampSql('o.created_at')})::text),
           ?, to_json(${isoTimestampSql('o.updated_at')})::text)::json
         from o where e.id = ?::uuid
       )
       select o.*, n.given as tried from n left join o on true`,
      [accountId, order.salesOrderNumber ?? null, order.salesOrderNumber ?? null, order.salesOrderNumber ?? null,
        id, accountId, order.integrationSourceId ?? null, order.customerId, String(order.total), ...DECIDED.map((field) => JSON.stringify(blank(id, field))), eventId],
    );
    if (row?.id) {
      const { tried: _tried, ...inserted } = row;
      return inserted;
    }
    const conflict = await duplicate(trx, accountId, order, row!.tried);
    if (conflict) throw conflict;
    if (order.salesOrderNumber) throw new ConflictError('The sales order conflicted with a concurrent change; retry it');
  }
}

/**
 * An order in two steps: its lines first, under an id of its own, then (after whatever else the create does with
 * them, such as reserving) its event and its row, which takes the account's order counter. The counter's row stays
 * locked from then to the commit, and every create of the account queues on it: taken last, it is held for one
 * statement rather than for the whole create. The lines' key to their order is checked at commit.
 */
export async function insertLines(trx: Knex.Transaction, accountId: string, orderId: string, lines: NewLine[]): Promise<SalesOrderLineRow[]> {
  const lineRows: SalesOrderLineRow[] = await trx('sales_order_lines')
    .insert(lines.map((line, position) => ({
      account_id: accountId,
      sales_order_id: orderId,
      position,
      item_id: line.itemId,
      sku: line.sku,
      quantity: String(line.quantity),
      price: String(line.price),
    })))
    .returning('*');
  return lineRows.map((line) => ({ ...line, quantity_reserved: 0 }));
}

/** The order's row and its `sales_order.created` event. */
export async function insertOrder(
  trx: Knex.Transaction,
  accountId: string,
  orderId: string,
  order: NewSalesOrder,
  lines: SalesOrderLineRow[],
): Promise<SalesOrderWithLines> {
  const draft = toSalesOrder({
    id: orderId, account_id: accountId, sales_order_number: blank(orderId, 'salesOrderNumber'), integration_source_id: order.integrationSourceId ?? null,
    customer_id: order.customerId, status: 'open', total: order.total, fulfilled_location_id: null,
    created_at: blank(orderId, 'createdAt'), updated_at: blank(orderId, 'updatedAt'), lines, fulfillments: [],
  });
  const [event] = await recordEvents(trx, accountId, [{ type: 'sales_order.created', data: draft }]);
  return { ...await insertOrderRow(trx, accountId, orderId, order, event!.id), lines, fulfillments: [] };
}

/** Moves a locked order to `status`. */
export async function setStatus(
  trx: Knex.Transaction,
  order: SalesOrderWithLines,
  status: SalesOrderStatus,
  values: Partial<Pick<SalesOrderRow, 'fulfilled_location_id'>> = {},
): Promise<SalesOrderWithLines> {
  const [row] = await trx('sales_orders')
    .where({ account_id: order.account_id, id: order.id })
    .update({ ...values, status, updated_at: trx.fn.now() })
    .returning('*');
  return (await withLines(trx, order.account_id, [row]))[0]!;
}

import type { Knex } from 'knex';
import { listOwned, whereId, withChildren, type OwnedRow } from '../../framework/crud.ts';
import { listPartRecords, partLinesJson, partRecordCtes, withPartRecords, type NewPartRecord, type PartRecordRow, type PartRecordTables } from '../../framework/line-parts.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import type { PurchaseOrderStatus } from './lifecycle.ts';
import { orderTotal } from '../../../shared/decimal.ts';
import { pricedLines, type CreatePurchaseOrder, type PurchaseOrder, type PurchaseOrderListQuery, type PurchaseReceipt } from './schema.ts';
import type { StockStatementExtension } from '../../../db/stock.ts';
import { rowsJson, stopSql, type Statement } from '../../../db/statement.ts';
import { isoTimestampSql, type Timestamp } from '../../../db/timestamps.ts';
import { isUuid } from '../../../shared/guards.ts';

export interface PurchaseOrderRow extends OwnedRow {
  supplier_name: string;
  location_id: string;
  status: PurchaseOrderStatus;
  expected_date: string | null;
  reference: string | null;
  total: number;
  created_by: string;
  closed_at: Timestamp | null;
}

export interface PurchaseOrderLineRow extends OwnedRow {
  purchase_order_id: string;
  position: number;
  item_id: string;
  quantity: number;
  unit_cost: number;
  /** Taken in by the order's receipts so far. */
  quantity_received: number;
}

export interface ReceiptRow extends PartRecordRow {
  purchase_order_id: string;
  lines: Array<{ lineId: string; itemId: string; quantity: number }>;
}

/** An order with its lines in position order and its receipts, oldest first: what every read and write returns. */
export type PurchaseOrderWithLines = PurchaseOrderRow & { lines: PurchaseOrderLineRow[]; receipts: ReceiptRow[] };

export const RECEIPT_TABLES: PartRecordTables = {
  records: 'purchase_receipts', lines: 'purchase_receipt_lines', recordId: 'receipt_id', orderId: 'purchase_order_id',
  orderLines: 'purchase_order_lines', orderLineId: 'purchase_order_line_id', done: 'quantity_received', field: 'lineId',
};

export function toReceipt(row: ReceiptRow): PurchaseReceipt {
  return {
    id: row.id, purchaseOrderId: row.purchase_order_id, locationId: row.location_id, reference: row.reference, lines: row.lines,
    createdBy: row.created_by, createdAt: row.created_at,
  };
}

export function toPurchaseOrder(row: PurchaseOrderWithLines): PurchaseOrder {
  return {
    id: row.id,
    supplierName: row.supplier_name,
    locationId: row.location_id,
    status: row.status,
    expectedDate: row.expected_date,
    reference: row.reference,
    lines: row.lines.map((line) => ({
      id: line.id, itemId: line.item_id, quantity: line.quantity, unitCost: line.unit_cost, quantityReceived: line.quantity_received,
    })),
    total: row.total,
    receipts: row.receipts.map(toReceipt),
    createdAt: row.created_at,
    updatedAt: row.updated_at,
  };
}

/** The lines and the receipts of every order given, in two queries whatever their number. */
export async function withLines(db: Knex, accountId: string, orders: PurchaseOrderRow[]): Promise<PurchaseOrderWithLines[]> {
  const withOrderLines = await withChildren(orders, 'lines', (ids): Promise<PurchaseOrderLineRow[]> =>
    db('purchase_order_lines').where({ account_id: accountId }).whereIn('purchase_order_id', ids).orderBy(['purchase_order_id', 'position']),
  (line) => line.purchase_order_id);
  return withPartRecords<PurchaseOrderRow & { lines: PurchaseOrderLineRow[] }, ReceiptRow, 'receipts'>(
    db, accountId, withOrderLines, RECEIPT_TABLES, 'receipts');
}

/** A page of one order's receipts. */
export const listReceipts = (db: Knex, accountId: string, orderId: string, page: PageRequest) =>
  listPartRecords<ReceiptRow>(db, accountId, RECEIPT_TABLES, orderId, page);

export async function insertPurchaseOrder(trx: Knex.Transaction, accountId: string, userId: string, input: CreatePurchaseOrder): Promise<PurchaseOrderWithLines> {
  const [order]: PurchaseOrderRow[] = await trx('purchase_orders').insert({
    account_id: accountId,
    supplier_name: input.supplierName,
    location_id: input.locationId,
    expected_date: input.expectedDate ?? null,
    reference: input.reference ?? null,
    // The create struct refused a total too large to store.
    total: orderTotal(pricedLines(input.lines))!,
    created_by: userId,
  }).returning('*');
  const lines: PurchaseOrderLineRow[] = await trx('purchase_order_lines').insert(input.lines.map((line, position) => ({
    account_id: accountId,
    purchase_order_id: order!.id,
    position,
    item_id: line.itemId,
    quantity: String(line.quantity),
    unit_cost: String(line.unitCost),
  }))).returning('*');
  return { ...order!, lines: lines.sort((a, b) => a.position - b.position), receipts: [] };
}

export async function listPurchaseOrders(db: Knex, accountId: string, filters: PurchaseOrderListQuery, page: PageRequest): Promise<PurchaseOrderWithLines[]> {
  const orders = await listOwned<PurchaseOrderRow>(db, 'purchase_orders', accountId, page, (query) => {
    if (filters.status !== undefined) query.where('status', filters.status);
    whereId(query, 'location_id', filters.locationId);
  });
  return withLines(db, accountId, orders);
}

/** An order as a transition reads it: with its row's version (`xmin`), which any change to it or its lines moves. */
export type VersionedPurchaseOrder = PurchaseOrderWithLines & { version: string };

/**
 * The order with its lines and receipts and its version, in one query: what GET answers, and what a transition
 * decides from (no lock: its statement checks the version).
 */
export async function findPurchaseOrder(db: Knex, accountId: string, id: string): Promise<VersionedPurchaseOrder | undefined> {
  if (!isUuid(id)) return undefined;
  const { rows: [row] } = await db.raw<{ rows: VersionedPurchaseOrder[] }>(
    `select o.*, o.xmin::text as version,
       ${rowsJson('(select * from purchase_order_lines l where l.purchase_order_id = o.id)', 'x.position')} as lines,
       ${rowsJson(`(select r.*, ${partLinesJson(RECEIPT_TABLES)} as lines from purchase_receipts r where r.purchase_order_id = o.id)`, 'x.created_at, x.id')} as receipts
     from purchase_orders o where o.account_id = ? and o.id = ?`,
    [accountId, id],
  );
  return row;
}

/** Why a transition's statement stopped: the order changed since it was read (the transition reads it again). */
export const STALE = 'the purchase order changed since it was read';

/** What a transition writes besides the stock: the order's new status, a receipt, and its event with the order after it. */
export interface TransitionWrite {
  accountId: string;
  userId: string;
  order: VersionedPurchaseOrder;
  status: PurchaseOrderStatus;
  receipt?: NewPartRecord<PurchaseOrderLineRow>;
  /** The order as the API returns it after the transition, `now` standing for the statement's time (its updatedAt, the receipt's createdAt). */
  record: PurchaseOrder;
  /** A string nobody can have sent (a new uuid), wherever the record holds the statement's time. */
  now: string;
  event?: string;
}

/**
 * The transition's CTEs in its stock statement: the order locked, if its version is still the one read (else the
 * statement stops, before its levels are checked); the receipt; the order's status; its event. The record comes
 * back as `record`.
 */
export function transitionStatement(q: Statement, write: TransitionWrite): StockStatementExtension {
  const a = q.param(write.accountId, 'uuid');
  const gate = 'exists (select 1 from po) and not exists (select 1 from refused)';
  const status = q.param(write.status, 'text');
  const record = `replace(${q.param(JSON.stringify(write.record), 'text')}, ${q.param(JSON.stringify(write.now), 'text')},
    to_json((select ${isoTimestampSql('ou.updated_at')} from ou))::text)::json`;
  return {
    ctes: [
      `po as materialized (select id from purchase_orders where account_id = ${a} and id = ${q.param(write.order.id, 'uuid')}
         and xmin::text = ${q.param(write.order.version, 'text')} for update)`,
      ...write.receipt ? partRecordCtes(q, write.accountId, write.userId, RECEIPT_TABLES, write.receipt, gate) : [],
      `ou as (update purchase_orders o set status = ${status}, updated_at = now(),
         closed_at = case when ${status} = 'closed' then now() else o.closed_at end
         where o.account_id = ${a} and o.id = (select id from po) and ${gate}
         returning o.updated_at)`,
    ],
    events: write.event ? `select ${q.param(write.event, 'text')} as type, ${record} as data, 1 as n` : undefined,
    guards: [`(select ${stopSql(q, STALE, "'{}'::jsonb")} where not exists (select 1 from po)) as stale`],
    columns: [`${record} as record`],
  };
}

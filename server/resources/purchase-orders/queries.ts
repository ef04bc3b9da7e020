import type { Knex } from 'knex';
import { listOwned, whereId, withChildren, type OwnedRow } from '../../framework/crud.ts';
import { listPartRecords, partLinesJson, withPartRecords, type PartRecordRow, type PartRecordTables } from '../../framework/line-parts.ts';
import type { PageRequest } from '../../framework/pagination.ts';
import type { PurchaseOrderStatus } from './lifecycle.ts';
import { orderTotal } from '../../../shared/decimal.ts';
import { pricedLines, type CreatePurchaseOrder, type PurchaseOrder, type PurchaseOrderListQuery, type PurchaseReceipt } from './schema.ts';
import { rowsJson } from '../../../db/statement.ts';
import type { Timestamp } from '../../../db/timestamps.ts';
import type { OrderTable, Versioned } from '../../framework/order-writes.ts';
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
export type VersionedPurchaseOrder = PurchaseOrderWithLines & Versioned;

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

/** Purchase orders for writeOrder: the order's row is all its version covers (the read's `xmin`). */
export const PURCHASE_ORDERS: OrderTable = { table: 'purchase_orders', noun: 'Purchase order' };

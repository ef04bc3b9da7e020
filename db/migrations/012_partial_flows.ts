import type { Knex } from 'knex';
import { DECIMAL, owned, ref, timestamps } from './columns.ts';

// Partial fulfilment and receiving. A fulfilment ships some lines of a sales order, or part of a line, from one
// location; a receipt receives some lines of a purchase order. Each is a record with its lines, and its movements
// name it as their source; a line keeps what its fulfilments or receipts took so far, under its order's lock.
interface RecordTables {
  records: string;
  lines: string;
  recordId: string;
  order: string;
  orderId: string;
  orderLines: string;
  orderLineId: string;
}

/** Fulfilments and receipts alike: a record of an order at a location, and its lines, each taking from one order line. */
async function recordsWithLines(knex: Knex, names: RecordTables): Promise<void> {
  await knex.schema.createTable(names.records, (t) => {
    owned(knex, t);
    t.uuid(names.orderId).notNullable().references('id').inTable(names.order).onDelete('CASCADE');
    ref(t, 'location_id', 'locations');
    t.text('reference');
    t.uuid('created_by').notNullable().references('id').inTable('users').onDelete('RESTRICT');
    timestamps(knex, t);
    t.index([names.orderId, 'created_at', 'id']);
  });
  await knex.schema.createTable(names.lines, (t) => {
    owned(knex, t);
    t.uuid(names.recordId).notNullable().references('id').inTable(names.records).onDelete('CASCADE');
    t.integer('position').notNullable();
    t.uuid(names.orderLineId).notNullable().references('id').inTable(names.orderLines).onDelete('CASCADE');
    ref(t, 'item_id', 'items');
    t.decimal('quantity', ...DECIMAL).notNullable();
    t.unique([names.recordId, 'position']);
    t.index([names.orderLineId]);
  });
  await knex.raw(`alter table ${names.lines} add constraint ${names.lines}_quantity_positive check (quantity > 0)`);
}

export async function up(knex: Knex): Promise<void> {
  await knex.raw(`alter table sales_orders drop constraint sales_orders_status_known,
    add constraint sales_orders_status_known check (status in ('open', 'partially_fulfilled', 'fulfilled', 'cancelled'))`);
  await knex.raw(`alter table purchase_orders drop constraint purchase_orders_status_known,
    add constraint purchase_orders_status_known
      check (status in ('draft', 'confirmed', 'partially_received', 'on_hold', 'closed', 'cancelled'))`);
  await knex.schema.alterTable('sales_order_lines', (t) => t.decimal('quantity_fulfilled', ...DECIMAL).notNullable().defaultTo(0));
  await knex.raw(`alter table sales_order_lines add constraint sales_order_lines_fulfilled_range
    check (quantity_fulfilled >= 0 and quantity_fulfilled <= quantity)`);
  await knex.schema.alterTable('purchase_order_lines', (t) => t.decimal('quantity_received', ...DECIMAL).notNullable().defaultTo(0));
  await knex.raw(`alter table purchase_order_lines add constraint purchase_order_lines_received_range
    check (quantity_received >= 0 and quantity_received <= quantity)`);

  await recordsWithLines(knex, {
    records: 'sales_fulfillments', lines: 'sales_fulfillment_lines', recordId: 'fulfillment_id',
    order: 'sales_orders', orderId: 'sales_order_id', orderLines: 'sales_order_lines', orderLineId: 'sales_order_line_id',
  });
  await recordsWithLines(knex, {
    records: 'purchase_receipts', lines: 'purchase_receipt_lines', recordId: 'receipt_id',
    order: 'purchase_orders', orderId: 'purchase_order_id', orderLines: 'purchase_order_lines', orderLineId: 'purchase_order_line_id',
  });

  // Orders fulfilled or closed before now took everything at once: each gets one record of everything, at the
  // time and by the user of its movements (which keep naming the order: the ledger is not rewritten).
  await knex.raw(`
    with made as (
      insert into sales_fulfillments (account_id, sales_order_id, location_id, created_by, created_at, updated_at)
      select o.account_id, o.id, o.fulfilled_location_id, m.created_by, m.created_at, m.created_at
      from sales_orders o
      join lateral (select created_by, created_at from stock_movements m
                    where m.account_id = o.account_id and m.source_type = 'sales_order' and m.source_id = o.id limit 1) m on true
      where o.status = 'fulfilled' and o.fulfilled_location_id is not null
      returning id, account_id, sales_order_id
    )
    insert into sales_fulfillment_lines (account_id, fulfillment_id, position, sales_order_line_id, item_id, quantity)
    select l.account_id, made.id, l.position, l.id, l.item_id, l.quantity
    from made join sales_order_lines l on l.sales_order_id = made.sales_order_id`);
  await knex.raw(`update sales_order_lines l set quantity_fulfilled = l.quantity
    from sales_orders o where o.id = l.sales_order_id and o.status = 'fulfilled'`);
  await knex.raw(`
    with made as (
      insert into purchase_receipts (account_id, purchase_order_id, location_id, created_by, created_at, updated_at)
      select o.account_id, o.id, o.location_id, m.created_by, m.created_at, m.created_at
      from purchase_orders o
      join lateral (select created_by, created_at from stock_movements m
                    where m.account_id = o.account_id and m.source_type = 'purchase_order' and m.source_id = o.id limit 1) m on true
      where o.status = 'closed'
      returning id, account_id, purchase_order_id
    )
    insert into purchase_receipt_lines (account_id, receipt_id, position, purchase_order_line_id, item_id, quantity)
    select l.account_id, made.id, l.position, l.id, l.item_id, l.quantity
    from made join purchase_order_lines l on l.purchase_order_id = made.purchase_order_id`);
  await knex.raw(`update purchase_order_lines l set quantity_received = l.quantity
    from purchase_orders o where o.id = l.purchase_order_id and o.status = 'closed'`);
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['purchase_receipt_lines', 'purchase_receipts', 'sales_fulfillment_lines', 'sales_fulfillments']) {
    await knex.schema.dropTableIfExists(table);
  }
  await knex.schema.alterTable('purchase_order_lines', (t) => t.dropColumn('quantity_received'));
  await knex.schema.alterTable('sales_order_lines', (t) => t.dropColumn('quantity_fulfilled'));
  await knex.raw(`alter table purchase_orders drop constraint purchase_orders_status_known,
    add constraint purchase_orders_status_known check (status in ('draft', 'confirmed', 'on_hold', 'closed', 'cancelled'))`);
  await knex.raw(`alter table sales_orders drop constraint sales_orders_status_known,
    add constraint sales_orders_status_known check (status in ('open', 'fulfilled', 'cancelled'))`);
}

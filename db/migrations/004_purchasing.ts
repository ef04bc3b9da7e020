import type { Knex } from 'knex';
import { DECIMAL, owned, ref, timestamps } from './columns.ts';

const PURCHASE_ORDER_STATUSES = ['draft', 'confirmed', 'on_hold', 'closed', 'cancelled'];

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('purchase_orders', (t) => {
    owned(knex, t);
    t.text('supplier_name').notNullable();
    ref(t, 'location_id', 'locations');
    t.text('status').notNullable().defaultTo('draft');
    t.date('expected_date');
    t.text('reference');
    t.decimal('total', ...DECIMAL).notNullable();
    t.uuid('created_by').notNullable().references('id').inTable('users').onDelete('RESTRICT');
    t.timestamp('closed_at', { useTz: true, precision: 3 });
    timestamps(knex, t);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'updated_at', 'id']);
    t.index(['account_id', 'status', 'created_at', 'id']);
    t.index(['account_id', 'location_id', 'created_at', 'id']);
  });
  await knex.raw(`alter table purchase_orders add constraint purchase_orders_status_known
    check (status in (${PURCHASE_ORDER_STATUSES.map((status) => `'${status}'`).join(', ')}))`);

  await knex.schema.createTable('purchase_order_lines', (t) => {
    owned(knex, t);
    t.uuid('purchase_order_id').notNullable().references('id').inTable('purchase_orders').onDelete('CASCADE');
    t.integer('position').notNullable();
    ref(t, 'item_id', 'items');
    t.decimal('quantity', ...DECIMAL).notNullable();
    t.decimal('unit_cost', ...DECIMAL).notNullable();
    timestamps(knex, t);
    t.unique(['purchase_order_id', 'position']);
    t.index(['item_id']);
  });
  await knex.raw(`alter table purchase_order_lines
    add constraint purchase_order_lines_quantity_positive check (quantity > 0),
    add constraint purchase_order_lines_unit_cost_not_negative check (unit_cost >= 0)`);

  await knex.schema.createTable('production_records', (t) => {
    owned(knex, t);
    ref(t, 'item_id', 'items');
    ref(t, 'location_id', 'locations');
    t.decimal('quantity', ...DECIMAL).notNullable();
    t.text('reference');
    t.uuid('created_by').notNullable().references('id').inTable('users').onDelete('RESTRICT');
    timestamps(knex, t);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'updated_at', 'id']);
    t.index(['account_id', 'item_id', 'created_at', 'id']);
  });
  await knex.raw('alter table production_records add constraint production_records_quantity_positive check (quantity > 0)');

  await knex.schema.createTable('production_record_components', (t) => {
    t.uuid('production_record_id').notNullable().references('id').inTable('production_records').onDelete('CASCADE');
    t.integer('position').notNullable();
    ref(t, 'item_id', 'items');
    t.decimal('quantity', ...DECIMAL).notNullable();
    t.primary(['production_record_id', 'position']);
    t.index(['item_id']);
  });
  await knex.raw('alter table production_record_components add constraint production_record_components_quantity_positive check (quantity > 0)');
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['production_record_components', 'production_records', 'purchase_order_lines', 'purchase_orders']) {
    await knex.schema.dropTableIfExists(table);
  }
}

import type { Knex } from 'knex';
import { DECIMAL, owned, timestamps } from './columns.ts';


export async function up(knex: Knex): Promise<void> {
  // Per-account sequences (`SO-000042`). A row is bumped with an upsert inside the transaction that uses the
  // value, so concurrent creates queue on its lock and a rolled-back create gives its number back.
  await knex.schema.createTable('account_counters', (t) => {
    t.uuid('account_id').notNullable().references('id').inTable('accounts').onDelete('CASCADE');
    t.text('name').notNullable();
    t.bigInteger('value').notNullable();
    timestamps(knex, t);
    t.primary(['account_id', 'name']);
  });

  await knex.schema.createTable('sales_orders', (t) => {
    owned(knex, t);
    t.text('sales_order_number').notNullable();
    t.text('integration_source_id');
    // Orders keep referring to their customer and items: those are never deleted from under an order.
    t.uuid('customer_id').notNullable().references('id').inTable('customers').onDelete('RESTRICT');
    t.text('status').notNullable().defaultTo('open');
    t.decimal('total', ...DECIMAL).notNullable();
    t.uuid('fulfilled_location_id').references('id').inTable('locations').onDelete('RESTRICT');
    timestamps(knex, t);
    // Both also serve as the indexes of the duplicate look-ups and the integrationSourceId filter.
    t.unique(['account_id', 'sales_order_number']);
    t.unique(['account_id', 'integration_source_id']);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'updated_at', 'id']);
    t.index(['account_id', 'status', 'created_at', 'id']);
    t.index(['account_id', 'customer_id', 'created_at', 'id']);
  });
  await knex.raw("alter table sales_orders add constraint sales_orders_status_known check (status in ('open', 'fulfilled', 'cancelled'))");

  await knex.schema.createTable('sales_order_lines', (t) => {
    owned(knex, t);
    t.uuid('sales_order_id').notNullable().references('id').inTable('sales_orders').onDelete('CASCADE');
    t.integer('position').notNullable();
    t.uuid('item_id').notNullable().references('id').inTable('items').onDelete('RESTRICT');
    // The item's sku when the order was taken: a later rename of the item does not rewrite the order.
    t.text('sku').notNullable();
    t.decimal('quantity', ...DECIMAL).notNullable();
    t.decimal('price', ...DECIMAL).notNullable();
    timestamps(knex, t);
    t.unique(['sales_order_id', 'position']);
    t.index(['account_id', 'item_id']);
  });
  await knex.raw('alter table sales_order_lines add constraint sales_order_lines_quantity_positive check (quantity > 0)');
  await knex.raw('alter table sales_order_lines add constraint sales_order_lines_price_not_negative check (price >= 0)');
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['sales_order_lines', 'sales_orders', 'account_counters']) {
    await knex.schema.dropTableIfExists(table);
  }
}

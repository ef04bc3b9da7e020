import type { Knex } from 'knex';
import { DECIMAL, owned, ref, timestamps } from './columns.ts';

// Stock counts: a location's levels set to what was counted, each line keeping what the level was, the difference
// (its `count` movement) and the level it left.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('stock_counts', (t) => {
    owned(knex, t);
    ref(t, 'location_id', 'locations');
    t.text('reason');
    t.uuid('created_by').notNullable().references('id').inTable('users').onDelete('RESTRICT');
    timestamps(knex, t);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'updated_at', 'id']);
  });
  await knex.schema.createTable('stock_count_lines', (t) => {
    owned(knex, t);
    t.uuid('count_id').notNullable().references('id').inTable('stock_counts').onDelete('CASCADE');
    t.integer('position').notNullable();
    ref(t, 'item_id', 'items');
    t.text('sku').notNullable();
    t.decimal('counted_quantity', ...DECIMAL).notNullable();
    t.decimal('previous_quantity', ...DECIMAL).notNullable();
    t.decimal('difference', ...DECIMAL).notNullable();
    t.decimal('level_after', ...DECIMAL).notNullable();
    t.decimal('reserved_after', ...DECIMAL).notNullable();
    t.decimal('incoming_after', ...DECIMAL).notNullable();
    t.unique(['count_id', 'position']);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('stock_count_lines');
  await knex.schema.dropTableIfExists('stock_counts');
}

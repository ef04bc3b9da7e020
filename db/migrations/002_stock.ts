import type { Knex } from 'knex';
import { DECIMAL, owned, ref, timestamps } from './columns.ts';


export async function up(knex: Knex): Promise<void> {
  // One row per item and location that ever held stock, kept equal to the sum of its movements.
  await knex.schema.createTable('stock_levels', (t) => {
    owned(knex, t);
    ref(t, 'item_id', 'items');
    ref(t, 'location_id', 'locations');
    t.decimal('quantity', ...DECIMAL).notNullable().defaultTo(0);
    timestamps(knex, t);
    t.unique(['account_id', 'item_id', 'location_id']);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'updated_at', 'id']);
    t.index(['account_id', 'location_id']);
  });
  await knex.raw('alter table stock_levels add constraint stock_levels_quantity_not_negative check (quantity >= 0)');

  // The ledger: immutable, one row per change of stock whatever caused it.
  await knex.schema.createTable('stock_movements', (t) => {
    owned(knex, t);
    ref(t, 'item_id', 'items');
    ref(t, 'location_id', 'locations');
    t.decimal('quantity', ...DECIMAL).notNullable();
    t.text('type').notNullable();
    t.text('reason');
    t.text('source_type').notNullable();
    t.uuid('source_id').notNullable();
    t.uuid('created_by').notNullable().references('id').inTable('users').onDelete('RESTRICT');
    timestamps(knex, t);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'item_id', 'location_id', 'created_at']);
    t.index(['account_id', 'source_type', 'source_id']);
  });
  await knex.raw('alter table stock_movements add constraint stock_movements_quantity_not_zero check (quantity <> 0)');

  await knex.schema.createTable('stock_adjustments', (t) => {
    owned(knex, t);
    ref(t, 'item_id', 'items');
    ref(t, 'location_id', 'locations');
    t.decimal('quantity', ...DECIMAL).notNullable();
    t.text('reason').notNullable();
    t.decimal('level_after', ...DECIMAL).notNullable();
    t.uuid('created_by').notNullable().references('id').inTable('users').onDelete('RESTRICT');
    timestamps(knex, t);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'item_id']);
  });

  await knex.schema.createTable('stock_transfers', (t) => {
    owned(knex, t);
    ref(t, 'item_id', 'items');
    ref(t, 'from_location_id', 'locations');
    ref(t, 'to_location_id', 'locations');
    t.decimal('quantity', ...DECIMAL).notNullable();
    t.text('reason');
    t.decimal('from_level_after', ...DECIMAL).notNullable();
    t.decimal('to_level_after', ...DECIMAL).notNullable();
    t.uuid('created_by').notNullable().references('id').inTable('users').onDelete('RESTRICT');
    timestamps(knex, t);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'item_id']);
  });

  // Written in the same transaction as the change that caused it, with its delivery job.
  await knex.schema.createTable('events', (t) => {
    owned(knex, t);
    // Commit-independent ordering for clients that poll: ids are random, seq only grows.
    t.bigIncrements('seq', { primaryKey: false }).notNullable().unique();
    t.text('type').notNullable();
    t.jsonb('data').notNullable();
    t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
    t.index(['account_id', 'seq']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['events', 'stock_transfers', 'stock_adjustments', 'stock_movements', 'stock_levels']) {
    await knex.schema.dropTableIfExists(table);
  }
}

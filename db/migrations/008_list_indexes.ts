import type { Knex } from 'knex';

// Every list filter gets an index, and the default item list (archived items left out) pages over an index that
// holds only what it lists: deep pages skip ids with an index-only scan (server/framework/pagination.ts).
export async function up(knex: Knex): Promise<void> {
  await knex.raw('create index items_live_account_created_index on items (account_id, created_at, id) where archived_at is null');
  await knex.raw('create index items_live_account_updated_index on items (account_id, updated_at, id) where archived_at is null');
  await knex.schema.alterTable('customers', (t) => t.index(['account_id', 'email']));
  await knex.schema.alterTable('stock_movements', (t) => {
    t.index(['account_id', 'location_id', 'created_at', 'id']);
    t.index(['account_id', 'type', 'created_at', 'id']);
  });
  await knex.schema.alterTable('stock_adjustments', (t) => t.index(['account_id', 'location_id']));
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('stock_adjustments', (t) => t.dropIndex(['account_id', 'location_id']));
  await knex.schema.alterTable('stock_movements', (t) => {
    t.dropIndex(['account_id', 'type', 'created_at', 'id']);
    t.dropIndex(['account_id', 'location_id', 'created_at', 'id']);
  });
  await knex.schema.alterTable('customers', (t) => t.dropIndex(['account_id', 'email']));
  await knex.raw('drop index items_live_account_updated_index');
  await knex.raw('drop index items_live_account_created_index');
}

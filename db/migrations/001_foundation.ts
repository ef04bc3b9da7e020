import type { Knex } from 'knex';
import { accountId, id, timestamps } from './columns.ts';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('accounts', (t) => {
    id(knex, t);
    t.text('name').notNullable();
    timestamps(knex, t);
  });

  await knex.schema.createTable('users', (t) => {
    id(knex, t);
    accountId(t);
    t.text('email').notNullable();
    timestamps(knex, t);
    t.unique(['account_id', 'email']);
  });

  await knex.schema.createTable('api_keys', (t) => {
    id(knex, t);
    accountId(t);
    t.uuid('user_id').notNullable().references('id').inTable('users').onDelete('CASCADE');
    t.text('label');
    // SHA-256 of the key: keys carry 256 bits of entropy, so a slow hash adds nothing.
    t.text('key_hash').notNullable().unique();
    t.text('key_prefix').notNullable();
    t.timestamp('last_used_at', { useTz: true, precision: 3 });
    t.timestamp('revoked_at', { useTz: true, precision: 3 });
    timestamps(knex, t);
    t.index(['account_id', 'created_at']);
  });

  await knex.schema.createTable('items', (t) => {
    id(knex, t);
    accountId(t);
    t.text('sku').notNullable();
    t.text('name').notNullable();
    t.text('description');
    t.text('unit').notNullable().defaultTo('pcs');
    t.decimal('price', 20, 6);
    t.decimal('cost', 20, 6);
    t.text('barcode');
    t.timestamp('archived_at', { useTz: true, precision: 3 });
    timestamps(knex, t);
    t.unique(['account_id', 'sku']);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'updated_at', 'id']);
  });

  await knex.schema.createTable('locations', (t) => {
    id(knex, t);
    accountId(t);
    t.text('name').notNullable();
    t.text('code');
    t.text('address');
    timestamps(knex, t);
    t.unique(['account_id', 'code']);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'updated_at', 'id']);
  });

  await knex.schema.createTable('customers', (t) => {
    id(knex, t);
    accountId(t);
    t.text('name').notNullable();
    t.text('email');
    t.text('phone');
    t.text('external_id');
    timestamps(knex, t);
    t.index(['account_id', 'external_id']);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'updated_at', 'id']);
  });
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['customers', 'locations', 'items', 'api_keys', 'users', 'accounts']) {
    await knex.schema.dropTableIfExists(table);
  }
}

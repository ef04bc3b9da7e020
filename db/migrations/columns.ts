// Column conventions every table follows (snake_case, uuid ids, account scoping, millisecond timestamps).
// Migrations are history: change what these produce only together with a migration that changes the tables.
import type { Knex } from 'knex';

/** Quantities and money: exact, 6 decimal places. */
export const DECIMAL = [20, 6] as const;

export function id(knex: Knex, t: Knex.CreateTableBuilder): void {
  t.uuid('id').primary().defaultTo(knex.raw('gen_random_uuid()'));
}

export function accountId(t: Knex.CreateTableBuilder): void {
  t.uuid('account_id').notNullable().references('id').inTable('accounts').onDelete('CASCADE');
}

/** An account-owned record: its id and its account. */
export function owned(knex: Knex, t: Knex.CreateTableBuilder): void {
  id(knex, t);
  accountId(t);
}

// Timestamps keep millisecond precision so that they round-trip exactly through JSON and page cursors.
export function timestamps(knex: Knex, t: Knex.CreateTableBuilder): void {
  t.timestamp('created_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
  t.timestamp('updated_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
}

/** A reference to a record that is archived, never deleted (items, locations, users): deleting it is refused. */
export function ref(t: Knex.CreateTableBuilder, column: string, table: string): void {
  t.uuid(column).notNullable().references('id').inTable(table).onDelete('RESTRICT');
}

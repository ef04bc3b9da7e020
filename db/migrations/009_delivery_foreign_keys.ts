import type { Knex } from 'knex';

// The worker writes a dispatch row and a delivery log row for every attempt, copying the account and event from
// the webhook and event rows it has just read in the same statement. Checking those two foreign keys again, row by
// row, was two thirds of the trigger work and about a third of PostgreSQL's time per delivery. The webhook's key
// stays: deleting a webhook (or its account, which deletes its webhooks) still deletes its dispatches and log, and
// events are never deleted on their own.
const TABLES = ['webhook_dispatches', 'webhook_deliveries'];

export async function up(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    await knex.schema.alterTable(table, (t) => {
      t.dropForeign(['account_id']);
      t.dropForeign(['event_id']);
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const table of TABLES) {
    await knex.schema.alterTable(table, (t) => {
      t.foreign('account_id').references('id').inTable('accounts').onDelete('CASCADE');
      t.foreign('event_id').references('id').inTable('events').onDelete('CASCADE');
    });
  }
}

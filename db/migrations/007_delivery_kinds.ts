import type { Knex } from 'knex';

// A delivery-log row says whether its attempt was an explicit redelivery (POST /webhooks/{id}/redeliver): the
// consistency check counts a second success of a scheduled delivery as an event acknowledged twice, and a
// redelivery as asked for.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.boolean('redelivery').notNullable().defaultTo(false);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('webhook_deliveries', (t) => {
    t.dropColumn('redelivery');
  });
}

import type { Knex } from 'knex';

// A write that is one statement decides inside it that it cannot go on (an order number taken meanwhile, an order
// changed since it was read): this stops the statement there, undoing everything it wrote, and says why (SQLSTATE
// SR000, `reason` as the message, `detail` as JSON in DETAIL) so that the caller can answer or retry (db/statement.ts).
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create function stockroom_stop(reason text, detail jsonb) returns boolean language plpgsql as $$
    begin
      raise exception '%', reason using errcode = 'SR000', detail = detail::text;
    end
  $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function if exists stockroom_stop(text, jsonb)');
}

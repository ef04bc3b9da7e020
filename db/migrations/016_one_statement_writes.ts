import type { Knex } from 'knex';

// A stock change is one statement (db/stock.ts): the levels it would refuse are found under their locks inside it,
// and this stops it there, naming them (SQLSTATE SR409, the levels as JSON in DETAIL), so that everything the
// statement wrote is undone and the 409 needs no second round trip to say why.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create function stockroom_refuse(detail jsonb) returns boolean language plpgsql as $$
    begin
      raise exception 'stock change refused' using errcode = 'SR409', detail = detail::text;
    end
  $$`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop function if exists stockroom_refuse(jsonb)');
}

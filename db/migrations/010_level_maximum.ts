import type { Knex } from 'knex';

// A level holds at most 999999999.999999: the most a JSON number carries exactly with 6 decimal places, and what
// moveStock lets a change reach (past it, a 409 naming the level). The constraint backs that check; NOT VALID
// leaves rows written before the limit as they are.
export async function up(knex: Knex): Promise<void> {
  await knex.raw('alter table stock_levels add constraint stock_levels_quantity_at_most check (quantity <= 999999999.999999) not valid');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('alter table stock_levels drop constraint stock_levels_quantity_at_most');
}

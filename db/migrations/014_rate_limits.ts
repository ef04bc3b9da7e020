import type { Knex } from 'knex';

// The per-key request counters every web process shares (rate-limiter-flexible's RateLimiterPostgres, whose
// statements expect these columns). UNLOGGED: a counter is one upsert per request, and without WAL that upsert
// costs a tenth of a logged one; a crash empties the table, which gives every key a fresh window and loses nothing
// else.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create unlogged table rate_limits (
    key varchar(255) primary key,
    points integer not null default 0,
    expire bigint
  )`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('rate_limits');
}

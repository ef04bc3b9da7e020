import type { Knex } from 'knex';

// Events are deleted after EVENT_RETENTION_DAYS (jobs/events__prune.ts). A poller that asks for what came after
// a deleted event must be told so (410), and one that sends an id that never existed told that instead (400):
// event ids now carry the millisecond their transaction began (UUIDv7 layout, built here since PostgreSQL 15 has
// no uuidv7()), and each account keeps the creation time of the newest event deleted from it.
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`create function stockroom_uuid7(at timestamptz) returns uuid language sql volatile parallel safe as $$
    select encode(set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid()) placing substring(int8send(floor(extract(epoch from at) * 1000)::bigint) from 3) from 1 for 6),
      52, 1), 53, 1), 'hex')::uuid
  $$`);
  await knex.raw('alter table events alter column id set default stockroom_uuid7(now())');
  await knex.schema.createTable('event_retention', (t) => {
    t.uuid('account_id').primary().references('id').inTable('accounts').onDelete('CASCADE');
    // Events created up to this moment may have been deleted (those still being delivered stay until they are not).
    t.timestamp('pruned_through', { useTz: true, precision: 3 }).notNullable();
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('event_retention');
  await knex.raw('alter table events alter column id set default gen_random_uuid()');
  await knex.raw('drop function if exists stockroom_uuid7(timestamptz)');
}

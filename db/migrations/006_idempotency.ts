import type { Knex } from 'knex';
import { accountId, timestamps } from './columns.ts';

export async function up(knex: Knex): Promise<void> {
  // One row per Idempotency-Key an account used in the last 24 hours. The primary key is what decides, across
  // every web process, which of two requests with one key runs: the other finds the row already there.
  await knex.schema.createTable('idempotency_keys', (t) => {
    accountId(t);
    t.text('key').notNullable();
    // sha256 of method, path and raw body: the same key with another request is a conflict, not a replay.
    t.text('request_hash').notNullable();
    t.text('state').notNullable();
    // Whose claim a running row is: a request whose lock expired and was taken over must not touch the new claim.
    t.uuid('lock_token').notNullable();
    t.timestamp('locked_until', { useTz: true, precision: 3 }).notNullable();
    t.integer('response_status');
    // The body as sent, encrypted (not jsonb, which would reorder its keys): a replay is byte for byte the same.
    t.text('response_body');
    t.jsonb('response_headers');
    timestamps(knex, t);
    t.timestamp('expires_at', { useTz: true, precision: 3 }).notNullable();
    t.primary(['account_id', 'key']);
    t.index(['expires_at']);
  });
  await knex.raw(`alter table idempotency_keys add constraint idempotency_keys_state check
    (state = 'running' and response_status is null or state = 'done' and response_status is not null)`);
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.dropTableIfExists('idempotency_keys');
}

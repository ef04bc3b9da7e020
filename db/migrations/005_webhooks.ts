import type { Knex } from 'knex';
import { accountId, owned, timestamps } from './columns.ts';

export async function up(knex: Knex): Promise<void> {
  await knex.schema.createTable('webhooks', (t) => {
    owned(knex, t);
    t.text('url').notNullable();
    t.specificType('events', 'text[]').notNullable();
    t.boolean('enabled').notNullable().defaultTo(true);
    t.text('disabled_reason');
    // Signing secrets, encrypted with ENCRYPTION_KEY: a dump of the database alone cannot sign.
    t.text('secret_encrypted').notNullable();
    t.text('previous_secret_encrypted');
    t.timestamp('previous_secret_expires_at', { useTz: true, precision: 3 });
    // The first failure since the last success: after 5 days of nothing else the subscription is disabled.
    t.timestamp('failing_since', { useTz: true, precision: 3 });
    timestamps(knex, t);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'updated_at', 'id']);
  });
  await knex.raw(`alter table webhooks add constraint webhooks_disabled_reason check
    (disabled_reason in ('manual', 'gone', 'failing') and not enabled or disabled_reason is null and enabled)`);

  // One row per event and subscription that wants it: the lasting "delivered once" key. graphile-worker's
  // job_key only de-duplicates while a job is pending; this row outlives every job.
  await knex.schema.createTable('webhook_dispatches', (t) => {
    t.uuid('webhook_id').notNullable().references('id').inTable('webhooks').onDelete('CASCADE');
    t.uuid('event_id').notNullable().references('id').inTable('events').onDelete('CASCADE');
    accountId(t);
    t.integer('attempts').notNullable().defaultTo(0);
    // Position in the retry schedule: the one job allowed to make the next scheduled attempt carries it.
    t.integer('retry').notNullable().defaultTo(0);
    t.timestamp('acknowledged_at', { useTz: true, precision: 3 });
    // Held while an attempt is in flight, so that two jobs for one dispatch never send at once.
    t.timestamp('leased_until', { useTz: true, precision: 3 });
    timestamps(knex, t);
    t.primary(['webhook_id', 'event_id']);
  });

  // The delivery log: one row per attempt, pruned after 30 days.
  await knex.schema.createTable('webhook_deliveries', (t) => {
    owned(knex, t);
    t.uuid('webhook_id').notNullable().references('id').inTable('webhooks').onDelete('CASCADE');
    t.uuid('event_id').notNullable().references('id').inTable('events').onDelete('CASCADE');
    t.text('event_type').notNullable();
    t.integer('attempt').notNullable();
    t.text('outcome').notNullable();
    t.integer('response_status');
    t.text('error');
    t.integer('duration_ms').notNullable();
    t.text('response_body');
    timestamps(knex, t);
    t.index(['webhook_id', 'created_at', 'id']);
    t.index(['webhook_id', 'event_id']);
    t.index(['created_at']);
  });
  await knex.raw(`alter table webhook_deliveries add constraint webhook_deliveries_outcome check (outcome in ('succeeded', 'failed'))`);

  // Workers write here every few seconds; a worker that stopped writing is dead and its jobs are released.
  await knex.schema.createTable('worker_heartbeats', (t) => {
    t.text('worker_id').primary();
    t.timestamp('seen_at', { useTz: true, precision: 3 }).notNullable().defaultTo(knex.fn.now());
  });

  // /events lists in (txid, seq) order and shows an event once no older transaction is still running: what
  // becomes visible later always sorts after what was visible before, so following `after` never skips an
  // event that committed late.
  await knex.raw('alter table events add column txid xid8 not null default pg_current_xact_id()');
  // json keeps the record's keys in the order the API returns them (jsonb would sort them).
  await knex.raw('alter table events alter column data type json using data::json');
  await knex.raw('create index events_account_txid_seq on events (account_id, txid, seq)');
}

export async function down(knex: Knex): Promise<void> {
  await knex.raw('drop index if exists events_account_txid_seq');
  await knex.raw('alter table events alter column data type jsonb using data::jsonb');
  await knex.raw('alter table events drop column if exists txid');
  for (const table of ['worker_heartbeats', 'webhook_deliveries', 'webhook_dispatches', 'webhooks']) {
    await knex.schema.dropTableIfExists(table);
  }
}

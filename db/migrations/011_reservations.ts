import type { Knex } from 'knex';
import { DECIMAL, owned, ref, timestamps } from './columns.ts';

const MAXIMUM = '999999999.999999';

// Availability. A level keeps, beside what is on hand, what is reserved (the sum of its open reservations, kept in
// its row under its lock by db/stock.ts) and what is incoming (still to be received on confirmed or on-hold
// purchase orders). Reservations are rows; the snapshots adjustments and transfers keep of their levels gain both.
export async function up(knex: Knex): Promise<void> {
  await knex.schema.alterTable('stock_levels', (t) => {
    t.decimal('reserved', ...DECIMAL).notNullable().defaultTo(0);
    t.decimal('incoming', ...DECIMAL).notNullable().defaultTo(0);
  });
  // What confirmed and on-hold orders bring, as it stood before the column existed.
  await knex.raw(`
    insert into stock_levels (account_id, item_id, location_id, incoming)
    select o.account_id, l.item_id, o.location_id, least(sum(l.quantity), ${MAXIMUM})
    from purchase_orders o join purchase_order_lines l on l.purchase_order_id = o.id
    where o.status in ('confirmed', 'on_hold')
    group by o.account_id, l.item_id, o.location_id
    on conflict (account_id, item_id, location_id) do update set incoming = excluded.incoming`);
  await knex.raw(`alter table stock_levels
    add constraint stock_levels_reserved_not_negative check (reserved >= 0),
    add constraint stock_levels_incoming_range check (incoming >= 0 and incoming <= ${MAXIMUM})`);
  // GET /stock-levels?oversold=true pages over this.
  await knex.raw('create index stock_levels_oversold_index on stock_levels (account_id, created_at, id) where quantity < reserved');

  await knex.schema.createTable('reservations', (t) => {
    owned(knex, t);
    ref(t, 'item_id', 'items');
    ref(t, 'location_id', 'locations');
    t.decimal('quantity', ...DECIMAL).notNullable();
    t.text('status').notNullable().defaultTo('open');
    t.text('release_reason');
    t.text('source_type').notNullable();
    // Checked at commit, like a line's: the order row comes last in its create (see the sales orders' queries).
    t.uuid('sales_order_id').references('id').inTable('sales_orders').onDelete('RESTRICT').deferrable('deferred');
    t.uuid('sales_order_line_id').references('id').inTable('sales_order_lines').onDelete('RESTRICT');
    t.text('reference');
    t.timestamp('expires_at', { useTz: true, precision: 3 });
    t.uuid('created_by').notNullable().references('id').inTable('users').onDelete('RESTRICT');
    timestamps(knex, t);
    t.index(['account_id', 'created_at', 'id']);
    t.index(['account_id', 'updated_at', 'id']);
    t.index(['sales_order_id']);
  });
  await knex.raw(`alter table reservations
    add constraint reservations_quantity_positive check (quantity > 0),
    add constraint reservations_status_known check (status in ('open', 'consumed', 'released')),
    add constraint reservations_reason check ((status = 'open') = (release_reason is null)
      and release_reason in ('cancelled', 'fulfilled', 'expired', 'deleted', 'completed')),
    add constraint reservations_source check (source_type = 'manual' and sales_order_id is null and sales_order_line_id is null
      or source_type = 'sales_order' and sales_order_id is not null and sales_order_line_id is not null)`);
  // A level's open reservations (its `reserved`), and a line's (the order's `quantityReserved`).
  await knex.raw("create index reservations_open_level_index on reservations (account_id, item_id, location_id) where status = 'open'");
  await knex.raw("create index reservations_open_line_index on reservations (sales_order_line_id) where status = 'open'");

  // A create writes its lines (and reservations) first and its order row last, so that the account's order counter,
  // bumped with the order row, stays locked only from there to the commit: the lines' key is checked at commit.
  await knex.raw('alter table sales_order_lines alter constraint sales_order_lines_sales_order_id_foreign deferrable initially deferred');

  await knex.schema.alterTable('stock_adjustments', (t) => {
    t.decimal('reserved_after', ...DECIMAL).notNullable().defaultTo(0);
    t.decimal('incoming_after', ...DECIMAL).notNullable().defaultTo(0);
  });
  await knex.schema.alterTable('stock_transfers', (t) => {
    t.decimal('from_reserved_after', ...DECIMAL).notNullable().defaultTo(0);
    t.decimal('from_incoming_after', ...DECIMAL).notNullable().defaultTo(0);
    t.decimal('to_reserved_after', ...DECIMAL).notNullable().defaultTo(0);
    t.decimal('to_incoming_after', ...DECIMAL).notNullable().defaultTo(0);
  });
}

export async function down(knex: Knex): Promise<void> {
  await knex.schema.alterTable('stock_transfers', (t) => {
    t.dropColumns('from_reserved_after', 'from_incoming_after', 'to_reserved_after', 'to_incoming_after');
  });
  await knex.schema.alterTable('stock_adjustments', (t) => t.dropColumns('reserved_after', 'incoming_after'));
  await knex.raw('alter table sales_order_lines alter constraint sales_order_lines_sales_order_id_foreign not deferrable');
  await knex.schema.dropTableIfExists('reservations');
  await knex.raw('drop index if exists stock_levels_oversold_index');
  await knex.schema.alterTable('stock_levels', (t) => t.dropColumns('reserved', 'incoming'));
}

import type { Knex } from 'knex';

// Every row a write inserts checked each of its foreign keys against its parent row, and locked that row (FOR KEY
// SHARE) to the commit: a stock adjustment's statement spent half its time in nine such checks, and every write of an
// account locked the same account and user rows, which concurrent writes then share through multixacts. The rows a
// stock write inserts most now each check one key, their stock level (account, item and location at once: the level
// exists, the statement has just locked or created it, and it references the item, the location and the account
// itself). Keys that repeat what another key already says go: a receipt or fulfilment line's account and item (its
// order line has them), an event's account (accounts are never deleted; events are pruned by age). `created_by` on
// these tables is the user of the key that made the request and users are never deleted, so it is not checked again.
const LEVEL_KEYS: Array<{ table: string; location: string; drop: string[] }> = [
  { table: 'stock_movements', location: 'location_id', drop: ['account_id', 'item_id', 'location_id', 'created_by'] },
  { table: 'stock_adjustments', location: 'location_id', drop: ['account_id', 'item_id', 'location_id', 'created_by'] },
  { table: 'stock_transfers', location: 'from_location_id', drop: ['account_id', 'item_id', 'from_location_id', 'created_by'] },
  { table: 'stock_transfers', location: 'to_location_id', drop: ['to_location_id'] },
  { table: 'reservations', location: 'location_id', drop: ['account_id', 'item_id', 'location_id', 'created_by'] },
];
const REPEATED_KEYS: Array<{ table: string; drop: string[] }> = [
  { table: 'purchase_receipt_lines', drop: ['account_id', 'item_id'] },
  { table: 'sales_fulfillment_lines', drop: ['account_id', 'item_id'] },
  { table: 'events', drop: ['account_id'] },
];

const levelKey = (table: string, location: string) => `${table}_${location}_level_foreign`;

export async function up(knex: Knex): Promise<void> {
  for (const { table, drop } of [...LEVEL_KEYS, ...REPEATED_KEYS]) {
    await knex.schema.alterTable(table, (t) => {
      for (const column of drop) t.dropForeign([column]);
    });
  }
  for (const { table, location } of LEVEL_KEYS) {
    // NOT VALID, then VALIDATE: the rows already there are checked without blocking writes meanwhile.
    await knex.raw(`alter table ?? add constraint ?? foreign key (account_id, item_id, ??)
      references stock_levels (account_id, item_id, location_id) on delete restrict not valid`, [table, levelKey(table, location), location]);
    await knex.raw('alter table ?? validate constraint ??', [table, levelKey(table, location)]);
  }
}

const REFERENCED: Record<string, string> = {
  account_id: 'accounts', item_id: 'items', location_id: 'locations', from_location_id: 'locations', to_location_id: 'locations', created_by: 'users',
};

export async function down(knex: Knex): Promise<void> {
  for (const { table, location } of LEVEL_KEYS) await knex.raw('alter table ?? drop constraint ??', [table, levelKey(table, location)]);
  for (const { table, drop } of [...LEVEL_KEYS, ...REPEATED_KEYS]) {
    await knex.schema.alterTable(table, (t) => {
      for (const column of drop) {
        t.foreign(column).references('id').inTable(REFERENCED[column]!).onDelete(column === 'account_id' ? 'CASCADE' : 'RESTRICT');
      }
    });
  }
}

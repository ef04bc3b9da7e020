import type { Knex } from 'knex';

// Every row a stock write inserts checked each of its foreign keys against the parent row, and locked that row (FOR
// KEY SHARE) to the commit: a stock adjustment's statement spent half its time in nine such checks (auto_explain,
// log_triggers), and every write of an account locked the same account and user rows, which concurrent writes then
// shared through multixacts. These rows are written only by applyStock's statement, which locks or creates the level
// of every item and location it writes in the same statement; the level keeps its keys (to the item, the location
// and the account) and `npm run check:consistency` reports a movement without its level. A composite key to the level
// instead (one check a row) cost a batch of 1,000 adjustments more than the four it replaced (413 ms against 283), so
// none. A receipt or fulfilment line keeps the keys to its record and its order line (which has the item); an event
// keeps none (accounts are never deleted, events are pruned by age). `created_by` is the user of the key that made
// the request, and users are never deleted.
const DROPPED: Record<string, string[]> = {
  stock_movements: ['account_id', 'item_id', 'location_id', 'created_by'],
  stock_adjustments: ['account_id', 'item_id', 'location_id', 'created_by'],
  stock_transfers: ['account_id', 'item_id', 'from_location_id', 'to_location_id', 'created_by'],
  reservations: ['account_id', 'item_id', 'location_id', 'created_by'],
  purchase_receipt_lines: ['account_id', 'item_id'],
  sales_fulfillment_lines: ['account_id', 'item_id'],
  events: ['account_id'],
};

const REFERENCED: Record<string, string> = {
  account_id: 'accounts', item_id: 'items', location_id: 'locations', from_location_id: 'locations', to_location_id: 'locations', created_by: 'users',
};

export async function up(knex: Knex): Promise<void> {
  for (const [table, columns] of Object.entries(DROPPED)) {
    await knex.schema.alterTable(table, (t) => {
      for (const column of columns) t.dropForeign([column]);
    });
  }
}

export async function down(knex: Knex): Promise<void> {
  for (const [table, columns] of Object.entries(DROPPED)) {
    await knex.schema.alterTable(table, (t) => {
      for (const column of columns) {
        t.foreign(column).references('id').inTable(REFERENCED[column]!).onDelete(column === 'account_id' ? 'CASCADE' : 'RESTRICT');
      }
    });
  }
}

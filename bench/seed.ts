// Realistic data for `npm run bench`, written with set-based SQL (generate_series): one account with 100,000
// items, 50 locations, 1,000,000 stock movements and the levels they add up to, 100,000 sales orders with their
// lines, confirmed purchase orders for the close scenario (counted in the levels' `incoming`), and webhook subscriptions.
import type { Knex } from 'knex';
import { createAccount, createApiKey } from '../db/accounts.ts';
import { encrypt } from '../shared/encryption.ts';
import { generateSecret } from '../shared/webhook-secrets.ts';

export interface SeedSizes {
  items: number;
  locations: number;
  movements: number;
  customers: number;
  salesOrders: number;
  /** Confirmed, 10 lines each: every close request takes the next one. */
  purchaseOrders: number;
}

export const SEED_SIZES: SeedSizes = {
  items: 100_000, locations: 50, movements: 1_000_000, customers: 1_000, salesOrders: 100_000, purchaseOrders: 20_000,
};

export interface Seeded {
  accountId: string;
  userId: string;
  apiKey: string;
  itemIds: string[];
  locationIds: string[];
  customerIds: string[];
  purchaseOrderIds: string[];
}

export async function seed(db: Knex, sizes: SeedSizes, webhookUrls: string[], secretKey: Buffer): Promise<Seeded> {
  const { accountId, userId } = await createAccount(db, 'Bench', 'bench@example.com');
  const { key: apiKey } = await createApiKey(db, { accountId, email: 'bench@example.com', label: 'bench' });
  // The rows are consistent by construction: a superuser (the embedded server) skips the per-row foreign key
  // triggers, which would otherwise take most of the seeding time.
  const { rows: [role] } = await db.raw('select rolsuper from pg_roles where rolname = current_user');
  const seeded = await db.transaction(async (trx) => {
    if (role.rolsuper) await trx.raw('set local session_replication_role = replica');
    return seedRows(trx, accountId, userId, sizes, webhookUrls, secretKey);
  });
  await db.raw('vacuum analyze');
  return { accountId, userId, apiKey, ...seeded };
}

async function seedRows(db: Knex, accountId: string, userId: string, sizes: SeedSizes, webhookUrls: string[], secretKey: Buffer): Promise<Omit<Seeded, 'accountId' | 'userId' | 'apiKey'>> {
  const run = (sql: string, bindings: unknown[] = []) => db.raw(sql, [accountId, ...bindings] as never);

  // Created a second apart, like records that arrived over time (the lists' order and cursors depend on it).
  await run(`insert into items (account_id, sku, name, description, unit, price, cost, barcode, created_at, updated_at)
    select ?, 'SKU-' || lpad(g::text, 7, '0'), 'Item ' || g, case when g % 3 = 0 then 'A useful part, number ' || g end, 'pcs',
           (1 + g % 500) + 0.25, (g % 400) + 0.1, case when g % 2 = 0 then lpad(g::text, 13, '0') end,
           t, t
    from generate_series(1, ?::int) g, lateral (select timestamptz '2025-01-01' + g * interval '1 second' as t) at`, [sizes.items]);
  await run(`insert into locations (account_id, name, code, created_at, updated_at)
    select ?, 'Warehouse ' || g, 'WH' || g, timestamptz '2024-12-01' + g * interval '1 minute', timestamptz '2024-12-01' + g * interval '1 minute'
    from generate_series(1, ?::int) g`, [sizes.locations]);
  await run(`insert into customers (account_id, name, email, created_at, updated_at)
    select ?, 'Customer ' || g, 'customer' || g || '@example.com', timestamptz '2024-12-01' + g * interval '1 minute', timestamptz '2024-12-01' + g * interval '1 minute'
    from generate_series(1, ?::int) g`, [sizes.customers]);

  // Numbered copies of the ids, so that generate_series rows can pick records by number.
  await db.raw(`create table bench_items as select id, sku, price, row_number() over (order by created_at, id)::int as n from items where account_id = ?`, [accountId]);
  await db.raw(`create table bench_locations as select id, row_number() over (order by created_at, id)::int as n from locations where account_id = ?`, [accountId]);
  await db.raw(`create table bench_customers as select id, row_number() over (order by created_at, id)::int as n from customers where account_id = ?`, [accountId]);
  await db.raw('create unique index on bench_items (n)');

  // Movements only add stock, so every level they sum to is positive.
  await run(`insert into stock_movements (account_id, item_id, location_id, quantity, type, reason, source_type, source_id, created_by, created_at, updated_at)
    select ?, i.id, l.id, 1 + g % 20, 'adjustment', 'seed', 'stock_adjustment', gen_random_uuid(), ?::uuid, t, t
    from generate_series(1, ?::int) g
    join bench_items i on i.n = 1 + (g::bigint * 7919) % ?::int
    join bench_locations l on l.n = 1 + (g / 7) % ?::int,
    lateral (select timestamptz '2025-03-01' + g * interval '100 milliseconds' as t) at`,
  [userId, sizes.movements, sizes.items, sizes.locations]);
  await run(`insert into stock_levels (account_id, item_id, location_id, quantity, created_at, updated_at)
    select ?, item_id, location_id, sum(quantity), min(created_at), max(created_at)
    from stock_movements where account_id = ? group by item_id, location_id`, [accountId]);

  await run(`insert into sales_orders (account_id, sales_order_number, customer_id, status, total, created_at, updated_at)
    select ?, 'SEED-' || lpad(g::text, 7, '0'), c.id, 'open', 0, t, t
    from generate_series(1, ?::int) g
    join bench_customers c on c.n = 1 + g % ?::int,
    lateral (select timestamptz '2025-06-01' + g * interval '10 seconds' as t) at`, [sizes.salesOrders, sizes.customers]);
  await db.raw('create table bench_orders as select id, created_at, row_number() over (order by created_at, id)::int as n from sales_orders where account_id = ?', [accountId]);
  await run(`insert into sales_order_lines (account_id, sales_order_id, position, item_id, sku, quantity, price, created_at, updated_at)
    select ?, o.id, p, i.id, i.sku, p, i.price, o.created_at, o.created_at
    from bench_orders o, generate_series(1, 3) p
    join bench_items i on true
    where i.n = 1 + (o.n::bigint * 31 + p * 977) % ?::int`, [sizes.items]);
  await db.raw(`update sales_orders o set total = l.total
    from (select sales_order_id, sum(quantity * price) as total from sales_order_lines group by sales_order_id) l
    where o.id = l.sales_order_id and o.account_id = ?`, [accountId]);

  await run(`insert into purchase_orders (account_id, supplier_name, location_id, status, total, created_by, created_at, updated_at)
    select ?, 'Supplier ' || g % 40, l.id, 'confirmed', 0, ?::uuid, t, t
    from generate_series(1, ?::int) g
    join bench_locations l on l.n = 1 + g % ?::int,
    lateral (select timestamptz '2025-09-01' + g * interval '1 minute' as t) at`, [userId, sizes.purchaseOrders, sizes.locations]);
  await db.raw('create table bench_purchase_orders as select id, created_at, row_number() over (order by created_at, id)::int as n from purchase_orders where account_id = ?', [accountId]);
  await run(`insert into purchase_order_lines (account_id, purchase_order_id, position, item_id, quantity, unit_cost, created_at, updated_at)
    select ?, o.id, p, i.id, 10 * p, 2.5, o.created_at, o.created_at
    from bench_purchase_orders o, generate_series(1, 10) p
    join bench_items i on true
    where i.n = 1 + (o.n::bigint * 53 + p * 1009) % ?::int`, [sizes.items]);
  await db.raw(`update purchase_orders o set total = l.total
    from (select purchase_order_id, sum(quantity * unit_cost) as total from purchase_order_lines group by purchase_order_id) l
    where o.id = l.purchase_order_id and o.account_id = ?`, [accountId]);
  // Confirmed orders are expected: their lines count in `incoming` where they will arrive.
  await run(`insert into stock_levels (account_id, item_id, location_id, incoming)
    select ?, l.item_id, o.location_id, sum(l.quantity) from purchase_orders o join purchase_order_lines l on l.purchase_order_id = o.id
    where o.account_id = ? group by l.item_id, o.location_id
    on conflict (account_id, item_id, location_id) do update set incoming = excluded.incoming`, [accountId]);

  for (const url of webhookUrls) {
    await db('webhooks').insert({ account_id: accountId, url, events: ['*'], secret_encrypted: encrypt(secretKey, generateSecret()) });
  }

  const ids = async (table: string) => (await db(table).orderBy('n').pluck('id')) as string[];
  const seeded = {
    itemIds: await ids('bench_items'),
    locationIds: await ids('bench_locations'),
    customerIds: await ids('bench_customers'),
    purchaseOrderIds: await ids('bench_purchase_orders'),
  };
  for (const table of ['bench_items', 'bench_locations', 'bench_customers', 'bench_orders', 'bench_purchase_orders']) {
    await db.schema.dropTable(table);
  }
  return seeded;
}

// The raw baseline of `npm run bench`: plain Koa and pg, no framework of ours, doing the SQL work the API does
// for the same requests (the key lookup, the same list query and columns, the same adjustment transaction with
// its movement, event and job). Our figures are printed as a ratio of this one's, measured in the same run.
// Started by bench/run.ts with DATABASE_URL and PORT; prints "listening <port>".
import { createHash, randomUUID } from 'node:crypto';
import Koa from 'koa';
import pg from 'pg';

const pool = new pg.Pool({ connectionString: process.env.DATABASE_URL, max: Number(process.env.DB_POOL_MAX ?? 10) });
const app = new Koa();
// autocannon cuts connections mid-request when a run ends: nothing to print (the API is silent likewise).
app.silent = true;

const LIST = (table: string, filter: string) => `select ${table}.* from ${table} where account_id = $1${filter} order by created_at, id limit $2`;
// Deep pages: the offset runs over the (account_id, created_at, id) index alone, then only the page's rows are read.
const DEEP_LIST = (table: string, filter: string) => `select ${table}.* from ${table} where ${table}.id in (
  select id from ${table} where account_id = $1${filter} order by created_at, id limit $2 offset $3)
  order by created_at, id`;

async function readJson(ctx: Koa.Context): Promise<Record<string, unknown>> {
  const chunks: Buffer[] = [];
  for await (const chunk of ctx.req) chunks.push(chunk as Buffer);
  return JSON.parse(Buffer.concat(chunks).toString('utf8'));
}

app.use(async (ctx) => {
  const key = ctx.get('X-API-Key');
  const { rows: [identity] } = await pool.query(
    'select id, account_id, user_id, last_used_at from api_keys where key_hash = $1 and revoked_at is null limit 1',
    [createHash('sha256').update(key).digest('hex')],
  );
  if (!identity) { ctx.status = 401; return; }
  const accountId = identity.account_id as string;
  const [, , , , resource, id] = ctx.path.split('/');

  if (ctx.method === 'GET' && resource === 'items' && id) {
    const { rows: [row] } = await pool.query('select * from items where account_id = $1 and id = $2 limit 1', [accountId, id]);
    ctx.body = row;
  } else if (ctx.method === 'GET' && resource === 'items') {
    const limit = Number(ctx.query.limit ?? 50);
    const offset = (Number(ctx.query.page ?? 1) - 1) * limit;
    const { rows } = offset === 0
      ? await pool.query(LIST('items', ' and archived_at is null'), [accountId, limit])
      : await pool.query(DEEP_LIST('items', ' and archived_at is null'), [accountId, limit, offset]);
    ctx.body = { data: rows, page: 1, limit };
  } else if (ctx.method === 'GET' && resource === 'stock-levels') {
    const { rows } = await pool.query(LIST('stock_levels', ' and item_id = $3'), [accountId, 50, ctx.query.itemId]);
    ctx.body = { data: rows, page: 1, limit: 50 };
  } else if (ctx.method === 'POST' && resource === 'stock-adjustments') {
    const body = await readJson(ctx);
    const client = await pool.connect();
    try {
      await client.query('begin');
      const { rows: items } = await client.query('select id from items where account_id = $1 and id = any($2::uuid[])', [accountId, [body.itemId]]);
      const { rows: locations } = await client.query('select id from locations where account_id = $1 and id = any($2::uuid[])', [accountId, [body.locationId]]);
      if (!items.length || !locations.length) throw new Error('reference');
      const adjustmentId = randomUUID();
      const { rows: [level] } = await client.query(
        `insert into stock_levels (account_id, item_id, location_id, quantity) values ($1, $2, $3, $4)
         on conflict (account_id, item_id, location_id) do update set quantity = stock_levels.quantity + excluded.quantity, updated_at = now()
         returning quantity`, [accountId, body.itemId, body.locationId, body.quantity]);
      const { rows: [movement] } = await client.query(
        `insert into stock_movements (account_id, item_id, location_id, quantity, type, reason, source_type, source_id, created_by)
         values ($1, $2, $3, $4, 'adjustment', $5, 'stock_adjustment', $6, $7) returning *`,
        [accountId, body.itemId, body.locationId, body.quantity, body.reason, adjustmentId, identity.user_id]);
      const { rows: [event] } = await client.query(
        'insert into events (account_id, type, data) values ($1, $2, $3) returning id, type, data, created_at',
        [accountId, 'stock.adjusted', JSON.stringify({ ...movement, stockLevel: { quantity: level.quantity } })]);
      await client.query(
        'select 1 from graphile_worker.add_jobs(array(select json_populate_recordset(null::graphile_worker.job_spec, $1::json)))',
        [JSON.stringify([{ identifier: 'events__dispatch', payload: { eventId: event.id }, job_key: `event:${event.id}` }])]);
      const { rows: [adjustment] } = await client.query(
        `insert into stock_adjustments (id, account_id, item_id, location_id, quantity, reason, level_after, created_by)
         values ($1, $2, $3, $4, $5, $6, $7, $8) returning *`,
        [adjustmentId, accountId, body.itemId, body.locationId, body.quantity, body.reason, level.quantity, identity.user_id]);
      await client.query('commit');
      ctx.status = 201;
      ctx.body = adjustment;
    } catch (error) {
      await client.query('rollback');
      throw error;
    } finally {
      client.release();
    }
  } else {
    ctx.status = 404;
  }
});

const server = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
  process.stdout.write(`listening ${(server.address() as { port: number }).port}\n`);
});
process.on('SIGTERM', () => { server.close(); void pool.end(); });

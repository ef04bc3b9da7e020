import test from 'ava';
import { useHarness, type TestAccount } from './helpers/harness.ts';
import { footprint as countRows, ledgerMismatches } from './helpers/ledger.ts';
import { statementsOf } from './helpers/statements.ts';

const h = useHarness(test);

interface Setup extends TestAccount {
  tableId: string;
  legId: string;
  topId: string;
  shopId: string;
  storeId: string;
}

/** A table is made of four legs and a top, in the shop. */
async function setup(): Promise<Setup> {
  const account = await h.newAccount();
  const post = async (path: string, body: unknown) => (await account.api.post(path, body)).body.id as string;
  return {
    ...account,
    tableId: await post('/items', { sku: 'TABLE', name: 'Table' }),
    legId: await post('/items', { sku: 'LEG', name: 'Leg' }),
    topId: await post('/items', { sku: 'TOP', name: 'Table top' }),
    shopId: await post('/locations', { name: 'Workshop', code: 'SHOP' }),
    storeId: await post('/locations', { name: 'Store', code: 'STORE' }),
  };
}

const stock = (s: Setup, itemId: string, quantity: number, locationId = s.shopId) =>
  s.api.post('/stock-adjustments', { itemId, locationId, quantity, reason: 'opening count' });

async function level(s: Setup, itemId: string, locationId = s.shopId): Promise<number> {
  const { body } = await s.api.get(`/stock-levels?itemId=${itemId}&locationId=${locationId}`);
  return body.data[0]?.quantity ?? 0;
}

const levels = (s: Setup) => Promise.all([s.tableId, s.legId, s.topId].map((id) => level(s, id)));

const recordBody = (s: Setup, extra: Record<string, unknown> = {}) => ({
  itemId: s.tableId,
  locationId: s.shopId,
  quantity: 2,
  components: [{ itemId: s.legId, quantity: 8 }, { itemId: s.topId, quantity: 2 }],
  reference: 'WO-17',
  ...extra,
});

const produce = (s: Setup, extra: Record<string, unknown> = {}) => s.api.post('/production-records', recordBody(s, extra));

const TABLES = ['production_records', 'stock_movements', 'stock_levels', 'events'];
const footprint = async (accountId: string) => ({
  ...(await countRows(h.db, accountId, TABLES)),
  components: Number((await h.db('production_record_components as c').join('production_records as r', 'r.id', 'c.production_record_id')
    .where('r.account_id', accountId).count({ n: '*' }).first())!.n),
});

test('with enough components: the product is added, every component consumed, one movement each pointing at the record', async (t) => {
  const s = await setup();
  await stock(s, s.legId, 10);
  await stock(s, s.topId, 2);

  const { status, body } = await produce(s);

  t.is(status, 201);
  t.deepEqual(Object.keys(body).sort(), ['components', 'createdAt', 'createdBy', 'id', 'itemId', 'locationId', 'quantity', 'reference', 'updatedAt']);
  t.like(body, { itemId: s.tableId, locationId: s.shopId, quantity: 2, reference: 'WO-17', createdBy: s.userId });
  t.deepEqual(body.components, [{ itemId: s.legId, quantity: 8 }, { itemId: s.topId, quantity: 2 }]);
  t.deepEqual(await levels(s), [2, 2, 0]);
  const movements = (await s.api.get('/stock-movements?type=production')).body.data;
  t.deepEqual(movements.map((m: { itemId: string; quantity: number }) => [m.itemId, m.quantity]).sort(), [[s.tableId, 2], [s.legId, -8], [s.topId, -2]].sort());
  for (const movement of movements) t.like(movement, { locationId: s.shopId, source: { type: 'production_record', id: body.id } });
  t.deepEqual((await s.api.get(`/production-records/${body.id}`)).body, body);
  t.deepEqual(await ledgerMismatches(h.db, s.accountId), []);

  const events = await h.db('events').where({ account_id: s.accountId }).whereIn('type', ['production_record.created', 'stock.adjusted'])
    .where('created_at', '>=', body.createdAt).orderBy('seq').select('type', 'data');
  t.deepEqual(events.filter((e) => e.type === 'production_record.created').map((e) => e.data), [body]);
  t.is(events.filter((e) => e.type === 'stock.adjusted' && e.data.source.id === body.id).length, 3, 'one stock.adjusted per movement');
});

test.serial('a record is its lookup and one write: record, components, movements, levels and events in one statement', async (t) => {
  const s = await setup();
  await stock(s, s.legId, 10);
  await stock(s, s.topId, 2);

  const sent = await statementsOf(async () => t.is((await produce(s)).status, 201));

  t.is(sent.length, 2, sent.join('\n---\n'));
  t.regex(sent[1]!, /insert into stock_levels[\s\S]*insert into production_records[\s\S]*insert into production_record_components[\s\S]*insert into events/);
});

test('with too little of two components: one 409 naming both shortages, and nothing changes', async (t) => {
  const s = await setup();
  await stock(s, s.legId, 7);
  await stock(s, s.topId, 1);
  const before = await footprint(s.accountId);
  const levelsBefore = await levels(s);

  const { status, body } = await produce(s);

  t.is(status, 409);
  t.deepEqual(body.shortages.sort((a: { itemId: string }, b: { itemId: string }) => a.itemId.localeCompare(b.itemId)), [
    { itemId: s.legId, locationId: s.shopId, available: 7, reserved: 0, requested: 8 },
    { itemId: s.topId, locationId: s.shopId, available: 1, reserved: 0, requested: 2 },
  ].sort((a, b) => a.itemId.localeCompare(b.itemId)));
  t.deepEqual(await footprint(s.accountId), before, 'no record, movement, level, event or job');
  t.deepEqual(await levels(s), levelsBefore);
  t.deepEqual(await ledgerMismatches(h.db, s.accountId), []);

  const elsewhere = await produce(s, { locationId: s.storeId, components: [{ itemId: s.topId, quantity: 1 }] });
  t.is(elsewhere.status, 409, 'components are consumed at the record\'s location only');
  t.like(elsewhere.body, { itemId: s.topId, locationId: s.storeId, available: 0, requested: 1 });
});

test('validation names every problem at once: shape, references, archived items, self-components and duplicates', async (t) => {
  const s = await setup();
  const other = await setup();
  const retired = (await s.api.post('/items', { sku: 'OLD', name: 'Retired' })).body.id;
  await s.api.delete(`/items/${retired}`);
  await stock(s, s.legId, 100);
  const before = await footprint(s.accountId);
  const cases: Array<[unknown, Array<[string, string?]>]> = [
    [{}, [['itemId', 'is required'], ['locationId', 'is required'], ['quantity', 'is required'], ['components', 'is required']]],
    [
      recordBody(s, { quantity: 0, locationId: other.shopId, components: [{ itemId: other.legId, quantity: -1 }, { itemId: 'nope', quantity: 1 }] }),
      [
        ['quantity', 'must be greater than 0'], ['components[0].quantity', 'must be greater than 0'],
        ['locationId', 'no location with this id in your account'], ['components[0].itemId', 'no item with this id in your account'],
        ['components[1].itemId', 'no item with this id in your account'],
      ],
    ],
    [recordBody(s, { components: [] }), [['components', 'must have from 1 to 500 components']]],
    [recordBody(s, { itemId: retired, components: [{ itemId: s.legId, quantity: 1 }] }), [['itemId', 'is an archived item']]],
    [
      recordBody(s, { components: [{ itemId: s.legId, quantity: 1 }, { itemId: s.tableId, quantity: 1 }] }),
      [['components[1].itemId', 'is the item produced: it cannot be its own component']],
    ],
    [
      recordBody(s, { components: [{ itemId: s.legId, quantity: 1 }, { itemId: s.topId, quantity: 1 }, { itemId: s.legId, quantity: 3 }] }),
      [['components[2].itemId', 'repeats components[0].itemId: list each component once with its total']],
    ],
    [recordBody(s, { components: [{ itemId: s.legId }], reference: 5 }), [['components[0].quantity', 'is required'], ['reference', 'must be a string']]],
  ];
  for (const [body, expected] of cases) {
    const { status, body: answer } = await s.api.post('/production-records', body);
    t.is(status, 400, JSON.stringify(body));
    t.deepEqual(answer.errors.map((e: { path: string }) => e.path), expected.map(([path]) => path), JSON.stringify(body));
    for (const [path, message] of expected) {
      if (message) t.is(answer.errors.find((e: { path: string }) => e.path === path)?.message, message, path);
    }
  }
  t.deepEqual(await footprint(s.accountId), before, 'nothing written');
});

test('lists filter by item and updatedSince, carry the components, and never show another account\'s records', async (t) => {
  const s = await setup();
  const other = await setup();
  await stock(s, s.legId, 100);
  await stock(s, s.topId, 100);
  await stock(other, other.legId, 100);
  const tables = (await produce(s, { reference: undefined })).body;
  const tops = (await produce(s, { itemId: s.topId, quantity: 1, components: [{ itemId: s.legId, quantity: 0.5 }] })).body;
  await produce(other, { components: [{ itemId: other.legId, quantity: 1 }] });

  const ids = async (query: string) => (await s.api.get(`/production-records${query}`)).body.data.map((r: { id: string }) => r.id);
  t.deepEqual(await ids(''), [tables.id, tops.id]);
  t.deepEqual(await ids(`?itemId=${s.topId}`), [tops.id]);
  t.deepEqual(await ids(`?itemId=${other.tableId}`), []);
  t.deepEqual(await ids(`?updatedSince=${encodeURIComponent(tops.updatedAt)}`), [tops.id]);
  t.deepEqual((await s.api.get('/production-records')).body.data, [tables, tops]);
  t.is(tables.reference, null);

  const page = await s.api.get('/production-records?limit=1');
  t.deepEqual(page.body.data, [tables]);
  t.regex(page.headers.get('link') ?? '', /rel="next"/);
  t.is((await other.api.get(`/production-records/${tables.id}`)).status, 404);
  t.deepEqual((await other.api.get(`/production-records/${tables.id}`)).body, { error: 'Production record not found' });
  t.is((await other.api.get('/production-records')).body.data.length, 1);
});

import test from 'ava';
import { useHarness, type TestAccount } from './helpers/harness.ts';
import type { Client, Response } from './helpers/client.ts';

const h = useHarness(test);

async function createItems(api: Client, count: number, prefix: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const { status, body } = await api.post('/items', { sku: `${prefix}-${String(i).padStart(4, '0')}`, name: `Item ${i}` });
    if (status !== 201) throw new Error(`setup: create item answered ${status} ${JSON.stringify(body)}`);
    ids.push(body.id);
  }
  return ids;
}

/** Loops pages as the interface document tells clients to, stopping at the first short page. */
async function pageLoop(api: Client, path: string, sizeParam: 'limit' | 'size', size: number) {
  const seen: string[] = [];
  let requests = 0;
  for (let page = 1; ; page += 1) {
    const { status, body } = await api.get(`${path}?page=${page}&${sizeParam}=${size}`);
    requests += 1;
    if (status !== 200) throw new Error(`page ${page} answered ${status}`);
    seen.push(...body.data.map((item: { id: string }) => item.id));
    if (body.data.length < size) break;
  }
  return { seen, requests };
}

let account: TestAccount;
let pagedIds: string[];

test.before(async () => {
  account = await h.newAccount('Paging account');
  pagedIds = await createItems(account.api, 120, 'PG');
});

test('creates an item with defaults and reads it back under both collection names', async (t) => {
  const { api } = await h.newAccount();
  const created = await api.post('/items', { sku: 'W-1', name: 'Widget', price: 12.5, cost: 7.25, barcode: '4006381333931' });
  t.is(created.status, 201);
  t.like(created.body, { sku: 'W-1', name: 'Widget', unit: 'pcs', price: 12.5, cost: 7.25, description: null, archived: false });
  t.regex(created.body.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/);

  for (const collection of ['items', 'inventory-items']) {
    const fetched = await api.get(`/${collection}/${created.body.id}`);
    t.is(fetched.status, 200);
    t.deepEqual(fetched.body, created.body);
  }
});

test('validation names every problem at once', async (t) => {
  const { api } = await h.newAccount();
  const { status, body } = await api.post('/items', {
    name: '   ', price: '12', cost: -1, unit: '', barcode: 5, colour: 'red', description: 'x'.repeat(5001),
  });
  t.is(status, 400);
  t.is(body.error, 'Validation failed');
  const byPath = Object.fromEntries(body.errors.map((e: { path: string; message: string }) => [e.path, e.message]));
  t.deepEqual(Object.keys(byPath).sort(), ['barcode', 'colour', 'cost', 'description', 'name', 'price', 'sku', 'unit']);
  t.is(byPath.sku, 'is required');
  t.is(byPath.name, 'must not be blank');
  t.is(byPath.price, 'must be a number');
  t.is(byPath.cost, 'must not be negative');
  t.is(byPath.colour, 'is not an allowed field');
});

test('quantities and money: more than 6 decimals or beyond the exact range are refused; 6 decimals round-trip', async (t) => {
  const { api } = await h.newAccount();
  const tooPrecise = await api.post('/items', { sku: 'P-1', name: 'Precise', price: 1.0000001 });
  t.is(tooPrecise.status, 400);
  t.deepEqual(tooPrecise.body.errors, [{ path: 'price', message: 'must have at most 6 decimal places' }]);
  const tooLarge = await api.post('/items', { sku: 'P-1', name: 'Precise', price: 1e15 });
  t.is(tooLarge.status, 400);
  t.is(tooLarge.body.errors[0].path, 'price');
  const exact = await api.post('/items', { sku: 'P-2', name: 'Exact', price: 123456789.123456, cost: 0.000001 });
  t.is(exact.status, 201);
  t.is(exact.body.price, 123456789.123456);
  t.is(exact.body.cost, 0.000001);
});

test('a duplicate sku is a 409 naming the existing item; another account may reuse it', async (t) => {
  const { api } = await h.newAccount();
  const first = await api.post('/items', { sku: 'DUP', name: 'First' });
  const second = await api.post('/items', { sku: 'DUP', name: 'Second' });
  t.is(second.status, 409);
  t.deepEqual(second.body, { error: 'An item with sku "DUP" already exists', sku: 'DUP', existingId: first.body.id });

  const other = await api.post('/items', { sku: 'OTHER', name: 'Other' });
  const renamed = await api.patch(`/items/${other.body.id}`, { sku: 'DUP' });
  t.is(renamed.status, 409);
  t.is(renamed.body.existingId, first.body.id);

  const elsewhere = await h.newAccount();
  t.is((await elsewhere.api.post('/items', { sku: 'DUP', name: 'Mine' })).status, 201);
});

test('PATCH changes only the fields sent and moves updatedAt', async (t) => {
  const { api } = await h.newAccount();
  const created = await api.post('/items', { sku: 'U-1', name: 'Before', price: 3, unit: 'kg' });
  const patched = await api.patch(`/items/${created.body.id}`, { name: 'After', price: null });
  t.is(patched.status, 200);
  t.like(patched.body, { sku: 'U-1', name: 'After', price: null, unit: 'kg' });
  t.true(patched.body.updatedAt >= created.body.updatedAt);
  t.is(patched.body.createdAt, created.body.createdAt);

  const invalid = await api.patch(`/items/${created.body.id}`, { name: '', unit: 3 });
  t.is(invalid.status, 400);
  t.deepEqual(invalid.body.errors.map((e: { path: string }) => e.path).sort(), ['name', 'unit']);
});

test('DELETE archives: readable by id, out of lists unless includeArchived, restorable', async (t) => {
  const { api } = await h.newAccount();
  const kept = await api.post('/items', { sku: 'KEEP', name: 'Kept' });
  const gone = await api.post('/items', { sku: 'GONE', name: 'Gone' });

  const archived = await api.delete(`/items/${gone.body.id}`);
  t.is(archived.status, 200);
  t.true(archived.body.archived);
  t.is((await api.delete(`/items/${gone.body.id}`)).status, 200, 'archiving twice is harmless');
  t.true((await api.get(`/items/${gone.body.id}`)).body.archived);

  const listed = await api.get('/items');
  t.deepEqual(listed.body.data.map((i: { id: string }) => i.id), [kept.body.id]);
  const all = await api.get('/inventory-items?includeArchived=true');
  t.deepEqual(all.body.data.map((i: { id: string }) => i.id), [kept.body.id, gone.body.id]);

  const restored = await api.patch(`/items/${gone.body.id}`, { archived: false });
  t.false(restored.body.archived);
  t.is((await api.get('/items')).body.data.length, 2);
});

test('an unknown or malformed id is a 404 with an error body', async (t) => {
  const { api } = await h.newAccount();
  for (const id of ['00000000-0000-4000-8000-000000000000', 'not-an-id']) {
    for (const [method, path] of [['GET', `/items/${id}`], ['GET', `/inventory-items/${id}`], ['PATCH', `/items/${id}`], ['DELETE', `/items/${id}`]] as const) {
      const response = await api.request(method, path, method === 'PATCH' ? { body: { name: 'x' } } : {});
      t.is(response.status, 404, `${method} ${path}`);
      t.deepEqual(response.body, { error: 'Item not found' });
    }
  }
});

for (const [path, sizeParam] of [['/items', 'limit'], ['/items', 'size'], ['/inventory-items', 'size'], ['/inventory-items', 'limit']] as const) {
  test(`a page loop over ${path} with ${sizeParam} sees each of 120 records exactly once and stops at the short page`, async (t) => {
    const { seen, requests } = await pageLoop(account.api, path, sizeParam, 25);
    t.is(requests, 5);
    t.is(seen.length, 120);
    t.is(new Set(seen).size, 120);
    t.deepEqual(seen, pagedIds, 'oldest first');
  });
}

test('an exact multiple of the page size ends with an empty page', async (t) => {
  const { seen, requests } = await pageLoop(account.api, '/items', 'limit', 40);
  t.is(requests, 4);
  t.deepEqual(seen, pagedIds);
});

test('the list body is {data, page, limit}; full pages link the next one, and following Link visits every record once', async (t) => {
  const first = await account.api.get('/items?limit=50');
  t.deepEqual(Object.keys(first.body).sort(), ['data', 'limit', 'page']);
  t.like(first.body, { page: 1, limit: 50 });

  const seen: string[] = [];
  let next: string | undefined = `${h.app.baseUrl}/rest/api/v2/items?limit=50`;
  let pages = 0;
  while (next) {
    const response: Response = await account.api.get(next);
    pages += 1;
    t.is(response.body.page, pages);
    seen.push(...response.body.data.map((i: { id: string }) => i.id));
    next = /<([^>]+)>; rel="next"/.exec(response.headers.get('link') ?? '')?.[1];
    if (response.body.data.length < 50) t.is(next, undefined, 'no Link on the short page');
  }
  t.is(pages, 3);
  t.deepEqual(seen, pagedIds);
});

test('default page size is 50; page sizes outside 1..250, disagreeing limit and size, and unknown parameters are 400s', async (t) => {
  t.is((await account.api.get('/items')).body.data.length, 50);
  t.is((await account.api.get('/items?limit=250')).body.data.length, 120);
  t.is((await account.api.get('/items?limit=30&size=30')).body.data.length, 30);

  const cases: Array<[string, string]> = [
    ['/items?limit=251', 'limit'],
    ['/items?limit=0', 'limit'],
    ['/items?size=-1', 'size'],
    ['/inventory-items?size=abc', 'size'],
    ['/items?limit=2.5', 'limit'],
    ['/items?page=0', 'page'],
    ['/items?limit=10&size=20', 'size'],
    ['/items?colour=red', 'colour'],
    ['/items?updatedSince=yesterday', 'updatedSince'],
    ['/items?cursor=bogus', 'cursor'],
  ];
  for (const [path, field] of cases) {
    const { status, body } = await account.api.get(path);
    t.is(status, 400, path);
    t.is(body.error, 'Validation failed', path);
    t.true(body.errors.some((e: { path: string }) => e.path === field), `${path} names ${field}`);
  }
  const several = await account.api.get('/items?limit=0&page=-2&includeArchived=maybe');
  t.deepEqual(several.body.errors.map((e: { path: string }) => e.path).sort(), ['includeArchived', 'limit', 'page']);
});

test('filters: sku, q (name or sku, case-insensitive), updatedSince ordered by updatedAt', async (t) => {
  const { api } = await h.newAccount();
  const bolt = await api.post('/items', { sku: 'BOLT-10', name: 'Hex bolt' });
  const nut = await api.post('/items', { sku: 'NUT-10', name: 'Hex nut' });
  await api.post('/items', { sku: 'WASHER_1', name: 'Flat washer' });

  t.deepEqual((await api.get('/items?sku=NUT-10')).body.data.map((i: { id: string }) => i.id), [nut.body.id]);
  t.deepEqual((await api.get('/items?q=hex')).body.data.map((i: { id: string }) => i.id), [bolt.body.id, nut.body.id]);
  t.is((await api.get('/items?q=bolt-1')).body.data.length, 1);
  t.is((await api.get('/items?q=%25')).body.data.length, 0, 'LIKE wildcards are matched literally');
  t.is((await api.get('/items?q=_')).body.data.length, 1);

  const since = new Date(Date.now() - 1000).toISOString();
  await new Promise((resolve) => setTimeout(resolve, 5));
  const touched = await api.patch(`/items/${bolt.body.id}`, { name: 'Hex bolt M10' });
  const changed = await api.get(`/items?updatedSince=${encodeURIComponent(touched.body.updatedAt)}`);
  t.deepEqual(changed.body.data.map((i: { id: string }) => i.id), [bolt.body.id]);
  const all = await api.get(`/items?updatedSince=${encodeURIComponent(since)}`);
  t.is(all.body.data.at(-1).id, bolt.body.id, 'ordered by updatedAt: the last one touched comes last');
});

test('a page loop sees every record once while new records are being created', async (t) => {
  const { api } = await h.newAccount();
  const initial = await createItems(api, 30, 'LIVE');
  const seen: string[] = [];
  const added: string[] = [];
  for (let page = 1; ; page += 1) {
    const { body } = await api.get(`/items?page=${page}&limit=10`);
    seen.push(...body.data.map((i: { id: string }) => i.id));
    if (body.data.length < 10) break;
    added.push(...(await createItems(api, 3, `NEW${page}`)));
  }
  t.deepEqual(seen, [...initial, ...added]);
  t.is(new Set(seen).size, seen.length);
});

test('a page loop does not skip a record when another leaves the list mid-loop; deep pages are remembered', async (t) => {
  const { api } = await h.newAccount();
  const items = await createItems(api, 30, 'LEAVE');
  const first = await api.get('/items?page=1&limit=10');
  t.deepEqual(first.body.data.map((i: { id: string }) => i.id), items.slice(0, 10));
  // An item already seen is archived: by offset, page 2 would now start at the 12th item and skip the 11th.
  await api.delete(`/items/${items[3]}`);
  const second = await api.get('/items?page=2&limit=10');
  t.deepEqual(second.body.data.map((i: { id: string }) => i.id), items.slice(10, 20));
  t.is(second.body.page, 2);

  // A page asked for again starts where it did; another page size, or the other collection name, is another
  // list, read by offset at its first visit.
  t.deepEqual((await api.get('/items?limit=10&page=2')).body.data, second.body.data);
  const remaining = items.filter((_, i) => i !== 3);
  t.deepEqual((await api.get('/items?page=2&limit=5')).body.data.map((i: { id: string }) => i.id), remaining.slice(5, 10));
  t.deepEqual((await api.get('/inventory-items?page=3&size=10')).body.data.map((i: { id: string }) => i.id), remaining.slice(20, 30));
});

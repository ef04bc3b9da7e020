// Paging against what the probe tried: cursors and dates that do not exist, client cursors that would mislead
// later plain requests, and a Host header that would write the Link.
import test from 'ava';
import fc from 'fast-check';
import { eventually } from './helpers/eventually.ts';
import { useHarness, type TestAccount } from './helpers/harness.ts';

const h = useHarness(test);

const cursorOf = (parts: unknown[]) => Buffer.from(JSON.stringify(parts)).toString('base64url');
const ids = (body: { data: Array<{ id: string }> }) => body.data.map((record) => record.id);

interface Listed {
  account: TestAccount;
  /** Every location, in list order. */
  all: Array<{ id: string; createdAt: string }>;
}

async function locations(count: number): Promise<Listed> {
  const account = await h.newAccount();
  for (let i = 0; i < count; i++) await account.api.post('/locations', { name: `Shelf ${i}` });
  const { body } = await account.api.get('/locations?limit=250');
  return { account, all: body.data };
}

test('a cursor whose time does not exist (February 31st, year 0) is a 400, never a database error', async (t) => {
  const { account, all } = await locations(1);
  for (const at of ['2020-02-31T00:00:00.000Z', '0000-01-01T00:00:00.000Z', '2021-02-29T00:00:00.000Z', '2026-11-22T24:00:00.000Z']) {
    const response = await account.api.get(`/locations?cursor=${cursorOf(['created_at', at, all[0]!.id])}`);
    t.is(response.status, 400, at);
    t.deepEqual(response.body.errors.map((e: { path: string }) => e.path), ['cursor'], at);
  }
});

test('updatedSince must name an instant that exists: 2020-02-30 is a 400, not the first of March', async (t) => {
  const { account } = await locations(1);
  for (const value of ['2020-02-30', '2020-02-30T10:00:00Z', '0000-06-01', '2026-13-01', '2026-11-22T10:61:00Z', '2026-11-22T10:00:00+24:00']) {
    const response = await account.api.get(`/locations?updatedSince=${encodeURIComponent(value)}`);
    t.is(response.status, 400, value);
    t.deepEqual(response.body.errors, [{ path: 'updatedSince', message: 'must be an ISO-8601 timestamp' }], value);
  }
  for (const value of ['2020-02-29', '2026-11-22T10:00:00Z', '2026-11-22T10:00:00.5+05:30', '2026-11-22 10:00']) {
    t.is((await account.api.get(`/locations?updatedSince=${encodeURIComponent(value)}`)).status, 200, value);
  }
});

test('a page read from a client\'s cursor is not remembered: a later plain page=3 is still records 11 to 15', async (t) => {
  const { account, all } = await locations(25);
  const twentieth = all[19]!;
  const steered = await account.api.get(`/locations?limit=5&page=3&cursor=${cursorOf(['created_at', twentieth.createdAt, twentieth.id])}`);
  t.deepEqual(ids(steered.body), all.slice(20, 25).map((record) => record.id));

  t.deepEqual(ids((await account.api.get('/locations?limit=5&page=3')).body), all.slice(10, 15).map((record) => record.id));
  t.deepEqual(ids((await account.api.get('/locations?limit=5&page=4')).body), all.slice(15, 20).map((record) => record.id));
});

test('property: plain pages equal OFFSET paging whatever cursor requests come between them', async (t) => {
  const request = fc.oneof(
    fc.record({ page: fc.integer({ min: 1, max: 6 }) }),
    fc.record({ page: fc.integer({ min: 1, max: 6 }), cursorAt: fc.integer({ min: 0, max: 21 }) }),
  );
  await fc.assert(fc.asyncProperty(fc.array(request, { minLength: 1, maxLength: 12 }), async (requests) => {
    // A fresh account per run: remembered page starts are per account and list.
    const { account, all } = await locations(22);
    for (const step of requests) {
      const limit = 4;
      if ('cursorAt' in step) {
        const from = all[step.cursorAt]!;
        const response = await account.api.get(`/locations?limit=${limit}&page=${step.page}&cursor=${cursorOf(['created_at', from.createdAt, from.id])}`);
        if (response.status !== 200) return false;
        continue;
      }
      const response = await account.api.get(`/locations?limit=${limit}&page=${step.page}`);
      const expected = all.slice((step.page - 1) * limit, step.page * limit).map((record) => record.id);
      if (JSON.stringify(ids(response.body)) !== JSON.stringify(expected)) return false;
    }
    return true;
  }), { numRuns: Number(process.env.FUZZ_RUNS ?? 15) });
  t.pass('every plain page matched OFFSET paging');
});

test('Link never comes from the Host header: relative by default, absolute under PUBLIC_URL', async (t) => {
  const { account } = await locations(3);
  const page = await account.api.get('/locations?limit=2', { headers: { Host: 'evil.example' } });
  const link = page.headers.get('link') ?? '';
  t.false(link.includes('evil.example'));
  t.regex(link, /^<\/rest\/api\/v2\/locations\?[^>]*page=2[^>]*>; rel="next"$/);
  const next = await account.api.get(/<([^>]+)>/.exec(link)![1]!);
  t.is(next.body.data.length, 1);

  await account.api.post('/items', { sku: 'A', name: 'A' });
  await account.api.post('/items', { sku: 'B', name: 'B' });
  // An event is listed once no older transaction is open on the server: other test files' may be, for a moment.
  let events = await account.api.get('/events?limit=1', { headers: { Host: 'evil.example' } });
  await eventually(async () => {
    events = await account.api.get('/events?limit=1', { headers: { Host: 'evil.example' } });
    return events.body.data.length === 1;
  });
  t.regex(events.headers.get('link') ?? '', /^<\/rest\/api\/v2\/events\?/);

  const published = await h.startApp({ publicUrl: 'https://api.example.com' });
  const absolute = await published.api(account.key).get('/locations?limit=2', { headers: { Host: 'evil.example' } });
  t.regex(absolute.headers.get('link') ?? '', /^<https:\/\/api\.example\.com\/rest\/api\/v2\/locations\?/);
});

import test from 'ava';
import { useHarness, type TestAccount } from './helpers/harness.ts';
import { footprint as countRows, ledgerMismatches } from './helpers/ledger.ts';
import { statementsOf, waitsForLock } from './helpers/statements.ts';

const h = useHarness(test);

interface Setup extends TestAccount {
  boltId: string;
  nutId: string;
  mainId: string;
  backId: string;
}

async function setup(): Promise<Setup> {
  const account = await h.newAccount();
  const bolt = await account.api.post('/items', { sku: 'BOLT', name: 'Bolt' });
  const nut = await account.api.post('/items', { sku: 'NUT', name: 'Nut' });
  const main = await account.api.post('/locations', { name: 'Main', code: 'MAIN' });
  const back = await account.api.post('/locations', { name: 'Back room', code: 'BACK' });
  return { ...account, boltId: bolt.body.id, nutId: nut.body.id, mainId: main.body.id, backId: back.body.id };
}

const orderBody = (s: Setup, extra: Record<string, unknown> = {}) => ({
  supplierName: 'Acme Fasteners',
  locationId: s.mainId,
  lines: [
    { itemId: s.boltId, quantity: 3, unitCost: 0.1 },
    { itemId: s.nutId, quantity: 2.5, unitCost: 0.2 },
    { itemId: s.boltId, quantity: 1, unitCost: 0.15 },
  ],
  expectedDate: '2026-12-01',
  reference: 'ACME-4711',
  ...extra,
});

const createOrder = (s: Setup, extra: Record<string, unknown> = {}) => s.api.post('/purchase-orders', orderBody(s, extra));
/** An operation of the life cycle; `receive` takes in one unit of the first line. */
async function transition(s: Setup, id: string, operation: string) {
  if (operation !== 'receive') return s.api.post(`/purchase-orders/${id}/${operation}`);
  const { body: order } = await s.api.get(`/purchase-orders/${id}`);
  const receipt = await s.api.post(`/purchase-orders/${id}/receipts`, { lines: [{ lineId: order.lines?.[0]?.id ?? id, quantity: 1 }] });
  return receipt.status === 201 ? { ...receipt, status: 200, body: receipt.body.purchaseOrder } : receipt;
}

async function level(s: Setup, itemId: string, locationId = s.mainId): Promise<number> {
  const { body } = await s.api.get(`/stock-levels?itemId=${itemId}&locationId=${locationId}`);
  return body.data[0]?.quantity ?? 0;
}

const TABLES = ['purchase_orders', 'purchase_order_lines', 'stock_movements', 'events'];
const footprint = (accountId: string) => countRows(h.db, accountId, TABLES);

// The contract's table, written out here independently of the code's: `null` is a 409. `receive` is a receipt of
// part of the order (POST /receipts); from `on_hold`, `confirm` returns to where it was held from.
const OPERATIONS = ['confirm', 'hold', 'receive', 'close', 'cancel'] as const;
const CONTRACT: Record<string, Record<(typeof OPERATIONS)[number], string | null>> = {
  draft: { confirm: 'confirmed', hold: 'on_hold', receive: null, close: null, cancel: 'cancelled' },
  confirmed: { confirm: null, hold: 'on_hold', receive: 'partially_received', close: 'closed', cancel: 'cancelled' },
  partially_received: { confirm: null, hold: 'on_hold', receive: 'partially_received', close: 'closed', cancel: 'cancelled' },
  on_hold: { confirm: 'confirmed', hold: null, receive: null, close: null, cancel: 'cancelled' },
  on_hold_received: { confirm: 'partially_received', hold: null, receive: null, close: null, cancel: 'cancelled' },
  closed: { confirm: null, hold: null, receive: null, close: null, cancel: null },
  cancelled: { confirm: null, hold: null, receive: null, close: null, cancel: null },
};
// How to reach each status from draft through the API.
const PATH_TO: Record<string, string[]> = {
  draft: [],
  confirmed: ['confirm'],
  partially_received: ['confirm', 'receive'],
  on_hold: ['hold'],
  on_hold_received: ['confirm', 'receive', 'hold'],
  closed: ['confirm', 'close'],
  cancelled: ['cancel'],
};

test('create answers 201 in draft with its lines and an exact total; GET and the list return the same order', async (t) => {
  const s = await setup();

  const { status, body } = await createOrder(s);

  t.is(status, 201);
  t.deepEqual(Object.keys(body).sort(), [
    'createdAt', 'expectedDate', 'id', 'lines', 'locationId', 'receipts', 'reference', 'status', 'supplierName', 'total', 'updatedAt',
  ]);
  t.deepEqual(body.receipts, []);
  t.like(body, { supplierName: 'Acme Fasteners', locationId: s.mainId, status: 'draft', expectedDate: '2026-12-01', reference: 'ACME-4711' });
  t.is(body.total, 0.95, '3 × 0.1 + 2.5 × 0.2 + 1 × 0.15, exactly');
  t.deepEqual(body.lines.map(({ id, ...line }: { id: string }) => line), [
    { itemId: s.boltId, quantity: 3, unitCost: 0.1, quantityReceived: 0 },
    { itemId: s.nutId, quantity: 2.5, unitCost: 0.2, quantityReceived: 0 },
    { itemId: s.boltId, quantity: 1, unitCost: 0.15, quantityReceived: 0 },
  ]);
  t.deepEqual((await s.api.get(`/purchase-orders/${body.id}`)).body, body);
  t.deepEqual((await s.api.get('/purchase-orders')).body.data, [body]);

  const minimal = await s.api.post('/purchase-orders', { supplierName: 'Bare', locationId: s.backId, lines: [{ itemId: s.nutId, quantity: 1, unitCost: 0 }] });
  t.is(minimal.status, 201);
  t.like(minimal.body, { expectedDate: null, reference: null, total: 0 });
  t.is((await createOrder(s, { lines: [{ itemId: s.boltId, quantity: 0.000001, unitCost: 0.5 }] })).body.total, 0.000001, 'half a millionth rounds up');
});

for (const [from, moves] of Object.entries(CONTRACT)) {
  for (const operation of OPERATIONS) {
    const to = moves[operation];
    test(`${operation} from ${from.replace('_received', ' after a receipt')}: ${to ? `200, ${to}` : '409'}`, async (t) => {
      const s = await setup();
      const { body: order } = await createOrder(s);
      for (const step of PATH_TO[from]!) t.is((await transition(s, order.id, step)).status, 200, `reaching ${from}: ${step}`);
      const before = await footprint(s.accountId);

      const response = await transition(s, order.id, operation);

      const after = await s.api.get(`/purchase-orders/${order.id}`);
      const status = from === 'on_hold_received' ? 'on_hold' : from;
      if (to) {
        t.is(response.status, 200);
        t.is(response.body.status, to);
        t.deepEqual(after.body, response.body);
      } else {
        t.is(response.status, 409);
        t.deepEqual(response.body, { error: `Cannot ${operation} a purchase order that is ${status}`, status, operation });
        t.is(after.body.status, status);
        t.deepEqual(await footprint(s.accountId), before, 'a refused transition writes nothing');
      }
    });
  }
}

test('a transition takes no body, an empty body or {} alike; an unknown or foreign order is a 404', async (t) => {
  const s = await setup();
  const other = await setup();
  const orders = await Promise.all([createOrder(s), createOrder(s), createOrder(s)]);
  const [none, empty, braces] = orders.map((o) => o.body.id as string);

  const withoutBody = await s.api.request('POST', `/purchase-orders/${none}/confirm`);
  const emptyBody = await s.api.request('POST', `/purchase-orders/${empty}/confirm`, { body: '', headers: { 'Content-Type': 'application/json' } });
  const emptyObject = await s.api.post(`/purchase-orders/${braces}/confirm`, {});

  t.deepEqual([withoutBody, emptyBody, emptyObject].map((r) => [r.status, r.body.status]), [[200, 'confirmed'], [200, 'confirmed'], [200, 'confirmed']]);
  const withField = await s.api.post(`/purchase-orders/${none}/hold`, { note: 'call first' });
  t.deepEqual(withField.body.errors, [{ path: 'note', message: 'is not an allowed field' }], 'a field is refused, not ignored');
  t.is((await s.api.post(`/purchase-orders/${none}/hold`, 'hold', { headers: { 'Content-Type': 'text/plain' } })).status, 415);
  t.is((await transition(s, '00000000-0000-4000-8000-000000000000', 'confirm')).status, 404);
  t.deepEqual((await transition(s, 'not-an-id', 'cancel')).body, { error: 'Purchase order not found' });
  t.is((await transition(other, none!, 'cancel')).status, 404, 'another account\'s order');
  t.is((await s.api.get(`/purchase-orders/${none}`)).body.status, 'confirmed');
});

test('close receives every line into the order\'s location as purchase_receipt movements; confirm and hold move nothing', async (t) => {
  const s = await setup();
  await s.api.post('/stock-adjustments', { itemId: s.boltId, locationId: s.mainId, quantity: 10, reason: 'opening count' });
  const { body: order } = await createOrder(s);
  const start = await footprint(s.accountId);

  await transition(s, order.id, 'hold');
  await transition(s, order.id, 'confirm');
  t.is((await footprint(s.accountId)).stock_movements, start.stock_movements, 'confirm and hold move nothing');
  t.is(await level(s, s.boltId), 10);
  const closed = await transition(s, order.id, 'close');

  t.is(closed.status, 200);
  t.is(closed.body.status, 'closed');
  t.is(await level(s, s.boltId), 14, '10 + 3 + 1');
  t.is(await level(s, s.nutId), 2.5);
  t.is(await level(s, s.boltId, s.backId), 0, 'nothing elsewhere');
  const receipts = (await s.api.get('/stock-movements?type=purchase_receipt')).body.data;
  t.deepEqual(
    receipts.map((m: { itemId: string; quantity: number }) => [m.itemId, m.quantity]).sort(),
    [[s.boltId, 3], [s.nutId, 2.5], [s.boltId, 1]].sort(),
  );
  const [receipt] = closed.body.receipts;
  t.deepEqual(closed.body.receipts, [{
    id: receipt.id, purchaseOrderId: order.id, locationId: s.mainId, reference: null, createdBy: s.userId, createdAt: receipt.createdAt,
    lines: order.lines.map((line: { id: string; itemId: string; quantity: number }) => ({ lineId: line.id, itemId: line.itemId, quantity: line.quantity })),
  }], 'close received everything as one receipt');
  t.deepEqual(closed.body.lines.map((line: { quantityReceived: number }) => line.quantityReceived), [3, 2.5, 1]);
  for (const movement of receipts) {
    t.like(movement, { locationId: s.mainId, type: 'purchase_receipt', source: { type: 'purchase_receipt', id: receipt.id }, createdBy: s.userId });
  }
  t.deepEqual(await ledgerMismatches(h.db, s.accountId), []);
});

// Serial: nothing else runs in this process meanwhile, so every statement seen is the request's.
test.serial('a receipt is two statements, its read and its write; an order changed in between is read again, not written over', async (t) => {
  const s = await setup();
  const { body: order } = await createOrder(s);
  t.is((await transition(s, order.id, 'confirm')).status, 200);
  const first = await statementsOf(async () => t.is((await s.api.post(`/purchase-orders/${order.id}/receipts`, {
    lines: [{ lineId: order.lines[0].id, quantity: 1 }],
  })).status, 201));
  // With lines named, the route first checks they are the order's (its resolve): one statement more.
  t.is(first.length, 3, first.join('\n---\n'));
  t.regex(first[2]!, /insert into stock_levels[\s\S]*insert into purchase_receipts[\s\S]*update purchase_orders[\s\S]*insert into events/);

  // Another transaction holds the order while the close's write waits for it, then changes it and commits: the
  // write finds the order is no longer as read, and the close runs again on the order as it now is.
  const holder = await h.db.transaction();
  await holder('purchase_orders').where({ id: order.id }).forUpdate().first();
  let closing: Promise<{ status: number; body: { status: string; lines: Array<{ quantityReceived: number }> } }> | undefined;
  const sent = statementsOf(async () => {
    closing = s.api.post(`/purchase-orders/${order.id}/close`);
    t.true(await waitsForLock(h.db), 'the close waits for the order');
    await holder('purchase_orders').where({ id: order.id }).update({ reference: 'Changed meanwhile', updated_at: h.db.fn.now() });
    await holder.commit();
    await closing;
  });
  const closed = await closing!;
  const statements = await sent;
  t.is(closed.status, 200);
  const kinds = statements.map((text) => (/o\.xmin::text as version/.test(text) ? 'read' : /update purchase_orders/.test(text) ? 'write' : 'the test\'s'));
  t.deepEqual(kinds.filter((kind) => kind !== 'the test\'s'), ['read', 'write', 'read', 'write'], 'the first write stopped; the order was read again');
  t.like(closed.body, { status: 'closed', reference: 'Changed meanwhile', lines: [{ quantityReceived: 3 }, { quantityReceived: 2.5 }, { quantityReceived: 1 }] });
  t.deepEqual((await s.api.get(`/purchase-orders/${order.id}`)).body, closed.body);
  t.is(await level(s, s.boltId), 4);
  t.deepEqual(await ledgerMismatches(h.db, s.accountId), []);
});

test('close and cancel racing on one order: one wins, the other is a 409 naming the new status; stock is received at most once', async (t) => {
  const s = await setup();
  const orders = await Promise.all(Array.from({ length: 6 }, () => createOrder(s, { lines: [{ itemId: s.boltId, quantity: 5, unitCost: 1 }] })));
  await Promise.all(orders.map((o) => transition(s, o.body.id, 'confirm')));

  const results = await Promise.all(orders.map((o) => Promise.all([transition(s, o.body.id, 'close'), transition(s, o.body.id, 'cancel')])));

  let closedCount = 0;
  for (const [[close, cancel], order] of results.map((pair, i) => [pair, orders[i]!.body] as const)) {
    const winners = [close, cancel].filter((r) => r.status === 200);
    t.is(winners.length, 1, 'exactly one wins');
    const final = (await s.api.get(`/purchase-orders/${order.id}`)).body.status;
    if (close.status === 200) {
      closedCount += 1;
      t.is(final, 'closed');
      t.deepEqual(cancel.body, { error: 'Cannot cancel a purchase order that is closed', status: 'closed', operation: 'cancel' });
    } else {
      t.is(final, 'cancelled');
      t.deepEqual(close.body, { error: 'Cannot close a purchase order that is cancelled', status: 'cancelled', operation: 'close' });
    }
    const received = await h.db('stock_movements as m').join('purchase_receipts as r', 'r.id', 'm.source_id')
      .where({ 'm.account_id': s.accountId, 'r.purchase_order_id': order.id }).count({ n: '*' }).first();
    t.is(Number(received!.n), close.status === 200 ? 1 : 0);
  }
  t.is(await level(s, s.boltId), 5 * closedCount);
  t.deepEqual(await ledgerMismatches(h.db, s.accountId), []);
});

test('close and close racing on one order: one 200, one 409; the goods are received once', async (t) => {
  const s = await setup();
  const orders = await Promise.all(Array.from({ length: 6 }, () => createOrder(s, { lines: [{ itemId: s.nutId, quantity: 2, unitCost: 1 }] })));
  await Promise.all(orders.map((o) => transition(s, o.body.id, 'confirm')));

  const results = await Promise.all(orders.map((o) => Promise.all([transition(s, o.body.id, 'close'), transition(s, o.body.id, 'close')])));

  for (const pair of results) {
    t.deepEqual(pair.map((r) => r.status).sort(), [200, 409]);
    t.like(pair.find((r) => r.status === 409)!.body, { status: 'closed', operation: 'close' });
  }
  t.is(await level(s, s.nutId), 2 * orders.length, 'each order received exactly once');
  t.is((await footprint(s.accountId)).stock_movements, orders.length);
  t.deepEqual(await ledgerMismatches(h.db, s.accountId), []);
});

test('validation names every problem at once, shape and references together', async (t) => {
  const s = await setup();
  const other = await setup();
  const archived = await s.api.post('/items', { sku: 'OLD', name: 'Retired' });
  await s.api.delete(`/items/${archived.body.id}`);
  const before = await footprint(s.accountId);
  const cases: Array<[unknown, Array<[string, string?]>]> = [
    [{}, [['supplierName', 'is required'], ['locationId', 'is required'], ['lines', 'is required']]],
    [
      orderBody(s, {
        supplierName: ' ',
        locationId: other.mainId,
        expectedDate: '2026-02-30',
        lines: [
          { itemId: other.boltId, quantity: 1, unitCost: 1 },
          { itemId: s.boltId, quantity: 0, unitCost: -1 },
          { itemId: 'nope', quantity: 1.0000001, unitCost: '3' },
        ],
      }),
      [
        ['supplierName', 'must not be blank'],
        ['lines[1].quantity', 'must be greater than 0'], ['lines[1].unitCost', 'must not be negative'],
        ['lines[2].quantity', 'must have at most 6 decimal places'], ['lines[2].unitCost', 'must be a number'],
        ['expectedDate', 'must be a calendar date as YYYY-MM-DD'],
        ['locationId', 'no location with this id in your account'], ['lines[0].itemId', 'no item with this id in your account'],
        ['lines[2].itemId', 'no item with this id in your account'],
      ],
    ],
    [orderBody(s, { lines: [] }), [['lines', 'must have from 1 to 500 lines']]],
    [orderBody(s, { lines: [{ itemId: archived.body.id, quantity: 1, unitCost: 1 }] }), [['lines[0].itemId', 'is an archived item']]],
    [orderBody(s, { expectedDate: '2026-12-01T00:00:00Z', extra: true }), [['expectedDate'], ['extra', 'is not an allowed field']]],
    [orderBody(s, { expectedDate: '2026-13-01' }), [['expectedDate']]],
    [orderBody(s, { lines: [{ itemId: s.boltId, quantity: 999_999_999, unitCost: 2 }] }), [['lines']]],
    [[orderBody(s)], [['body', 'must be an object']]],
  ];
  for (const [body, expected] of cases) {
    const { status, body: answer } = await s.api.post('/purchase-orders', body);
    t.is(status, 400, JSON.stringify(body));
    t.deepEqual(answer.errors.map((e: { path: string }) => e.path), expected.map(([path]) => path), JSON.stringify(body));
    for (const [path, message] of expected) {
      if (message) t.is(answer.errors.find((e: { path: string }) => e.path === path)?.message, message, path);
    }
  }
  t.deepEqual(await footprint(s.accountId), before, 'nothing written');
  t.is((await createOrder(s, { expectedDate: '2028-02-29' })).status, 201, 'a leap day is a date');
});

test('lists filter by status, location and updatedSince, page with a Link, and never show another account\'s orders', async (t) => {
  const s = await setup();
  const other = await setup();
  const first = (await createOrder(s)).body;
  const second = (await createOrder(s, { locationId: s.backId })).body;
  const third = (await createOrder(s)).body;
  await createOrder(other);
  await transition(s, second.id, 'confirm');
  const held = (await transition(s, first.id, 'hold')).body;

  const ids = async (query: string) => (await s.api.get(`/purchase-orders${query}`)).body.data.map((o: { id: string }) => o.id);
  t.deepEqual(await ids(''), [first.id, second.id, third.id]);
  t.deepEqual(await ids('?status=draft'), [third.id]);
  t.deepEqual(await ids('?status=on_hold'), [first.id]);
  t.deepEqual(await ids(`?locationId=${s.backId}`), [second.id]);
  t.deepEqual(await ids(`?locationId=${other.mainId}`), []);
  t.deepEqual(await ids(`?updatedSince=${encodeURIComponent(held.updatedAt)}`), [first.id], 'ordered by updatedAt');
  t.is((await s.api.get('/purchase-orders?status=open')).status, 400);

  const page = await s.api.get('/purchase-orders?limit=2');
  t.is(page.body.data.length, 2);
  t.deepEqual(page.body.data[0].lines, first.lines, 'lines come with every listed order');
  const next = await s.api.get(page.headers.get('link')!.match(/<([^>]+)>/)![1]!);
  t.deepEqual(next.body.data.map((o: { id: string }) => o.id), [third.id]);
  t.is((await other.api.get(`/purchase-orders/${first.id}`)).status, 404);
  t.is((await other.api.get('/purchase-orders')).body.data.length, 1);
});

test.serial('reads and writes issue the same number of statements whatever the number of lines', async (t) => {
  const s = await setup();
  const line = { itemId: s.boltId, quantity: 1, unitCost: 1 };
  const counted = async (run: () => Promise<unknown>) => {
    let statements = 0;
    // The key lookup (cached for a second, so present or not depending on timing) is not the route's doing.
    const count = (query: { sql: string }) => { if (!query.sql.includes('api_keys')) statements += 1; };
    h.db.on('query', count);
    try {
      await run();
    } finally {
      h.db.off('query', count);
    }
    return statements;
  };

  let one = '';
  let forty = '';
  const small = await counted(async () => { one = (await createOrder(s, { lines: [line] })).body.id; });
  const large = await counted(async () => { forty = (await createOrder(s, { lines: Array.from({ length: 40 }, () => line) })).body.id; });
  t.true(small > 0);
  t.is(large, small, 'create');
  t.is(await counted(() => s.api.get(`/purchase-orders/${forty}`)), await counted(() => s.api.get(`/purchase-orders/${one}`)), 'get');
  await Promise.all([transition(s, one, 'confirm'), transition(s, forty, 'confirm')]);
  // moveStock takes one statement for one level and two for several, whatever their number: both orders change one.
  t.is(await counted(() => transition(s, forty, 'close')), await counted(() => transition(s, one, 'close')), 'close');
  const onePage = await counted(() => s.api.get('/purchase-orders?limit=1'));
  const fullPage = await counted(() => s.api.get('/purchase-orders'));
  t.is(fullPage, onePage, 'list');
});

test('each change records its event with the order as the API returns it, in the same transaction; refusals record none', async (t) => {
  const s = await setup();
  const eventsOf = async () => (await h.db('events').where({ account_id: s.accountId }).whereLike('type', 'purchase_order.%').orderBy('seq').select('type', 'data'));

  const created = (await createOrder(s)).body;
  const held = (await transition(s, created.id, 'hold')).body;
  const confirmed = (await transition(s, created.id, 'confirm')).body;
  const closed = (await transition(s, created.id, 'close')).body;
  const other = (await createOrder(s)).body;
  const cancelled = (await transition(s, other.id, 'cancel')).body;
  const before = await footprint(s.accountId);
  await transition(s, other.id, 'confirm');
  await s.api.post('/purchase-orders', { ...orderBody(s), locationId: 'nowhere' });

  t.deepEqual(await eventsOf(), [
    { type: 'purchase_order.created', data: created },
    { type: 'purchase_order.held', data: held },
    { type: 'purchase_order.confirmed', data: confirmed },
    { type: 'purchase_order.closed', data: closed },
    { type: 'purchase_order.created', data: other },
    { type: 'purchase_order.cancelled', data: cancelled },
  ]);
  const receipts = await h.db('events').where({ account_id: s.accountId, type: 'stock.adjusted' }).select('data');
  t.is(receipts.length, 3, 'one stock.adjusted per line received');
  for (const { data } of receipts) t.deepEqual(data.source, { type: 'purchase_receipt', id: closed.receipts[0].id });
  t.deepEqual(await footprint(s.accountId), before, 'the 409 and the 400 recorded nothing');
  t.is(before.jobs, before.events, 'every event has its job');
});

test('the OpenAPI document describes each transition from the table, with its 409', async (t) => {
  const doc = (await h.app.api().get('/openapi.json')).body;
  const close = doc.paths['/purchase-orders/{id}/close'].post;
  t.regex(close.description, /Allowed from `confirmed` \(to `closed`\) and `partially_received` \(to `closed`\); from any other status it is a 409/);
  t.truthy(close.responses['409']);
  t.false(close.requestBody.required, 'no body needed');
  t.truthy(close.responses['415']);
  t.truthy(close.responses['404']);
  t.regex(doc.paths['/purchase-orders/{id}/cancel'].post.description,
    /`draft` \(to `cancelled`\), `confirmed` \(to `cancelled`\), `partially_received` \(to `cancelled`\) and `on_hold` \(to `cancelled`\)/);
  t.regex(doc.paths['/purchase-orders/{id}/confirm'].post.description,
    /`on_hold` \(to `partially_received` once something was received, else `confirmed`\)/);
  t.regex(doc.paths['/purchase-orders/{id}/receipts'].post.description,
    /`confirmed` \(to `closed` once every line is received in full, else `partially_received`\)/);
  t.deepEqual(doc.components.schemas.PurchaseOrder.properties.expectedDate.type, ['string', 'null']);
});

test('an order that would take a level past 999999999.999999 is a 409 naming the level, not a level that stops equalling its movements', async (t) => {
  // Setup: the probe's order, 10 lines of 999999999.999999 and one of 0.000001; and a level just under the maximum
  // with an order of 2 for it.
  const s = await setup();
  const lines = [...Array.from({ length: 10 }, () => ({ itemId: s.boltId, quantity: 999_999_999.999999, unitCost: 0 })), { itemId: s.boltId, quantity: 0.000001, unitCost: 0 }];
  const order = await createOrder(s, { lines });
  await s.api.post('/stock-adjustments', { itemId: s.nutId, locationId: s.mainId, quantity: 999_999_999, reason: 'count' });
  const nearly = await createOrder(s, { lines: [{ itemId: s.nutId, quantity: 2, unitCost: 0 }] });
  t.is((await transition(s, nearly.body.id, 'confirm')).status, 200);
  const before = await footprint(s.accountId);

  // Action: what the first would bring cannot even be expected; the second cannot be received.
  const confirmed = await transition(s, order.body.id, 'confirm');
  const closed = await transition(s, nearly.body.id, 'close');

  // Assertions
  t.is(confirmed.status, 409);
  t.deepEqual(confirmed.body.overflows, [{ itemId: s.boltId, locationId: s.mainId, incoming: 0, added: 9_999_999_999.999991, maximum: 999_999_999.999999 }]);
  t.regex(confirmed.body.error, /Incoming stock at a level reaches at most 999999999\.999999/);
  t.is(closed.status, 409);
  t.like(closed.body, { itemId: s.nutId, locationId: s.mainId, quantity: 999_999_999, added: 2, maximum: 999_999_999.999999 });
  t.deepEqual(closed.body.overflows, [{ itemId: s.nutId, locationId: s.mainId, quantity: 999_999_999, added: 2, maximum: 999_999_999.999999 }]);
  t.regex(closed.body.error, /holds at most 999999999\.999999/);
  t.deepEqual(await footprint(s.accountId), before);
  t.is((await s.api.get(`/purchase-orders/${order.body.id}`)).body.status, 'draft');
  t.is((await s.api.get(`/purchase-orders/${nearly.body.id}`)).body.status, 'confirmed');
  t.deepEqual(await ledgerMismatches(h.db, s.accountId), []);
});

test('a level reaches 999999999.999999 exactly, sums stay exact on the way, and a millionth more is a 409 rather than a 500', async (t) => {
  // Setup
  const s = await setup();
  const receive = async (lines: Array<{ itemId: string; quantity: number; unitCost: number }>) => {
    const order = await createOrder(s, { lines });
    await transition(s, order.body.id, 'confirm');
    return transition(s, order.body.id, 'close');
  };

  // Action: fractions that doubles would not sum exactly, up to the maximum; then one millionth past it.
  t.is((await receive([{ itemId: s.boltId, quantity: 333_333_333.333333, unitCost: 0 }, { itemId: s.boltId, quantity: 333_333_333.333333, unitCost: 0 }])).status, 200);
  t.is((await receive([{ itemId: s.boltId, quantity: 333_333_333.333333, unitCost: 0 }, { itemId: s.nutId, quantity: 0.1, unitCost: 0 }])).status, 200);
  const atMaximum = await level(s, s.boltId);
  const past = await s.api.post('/stock-adjustments', { itemId: s.boltId, locationId: s.mainId, quantity: 0.000001, reason: 'count' });
  const pastByReceipt = await receive([{ itemId: s.boltId, quantity: 0.000001, unitCost: 0 }, { itemId: s.nutId, quantity: 0.2, unitCost: 0 }]);

  // Assertions
  t.is(atMaximum, 999_999_999.999999);
  t.is(past.status, 409);
  t.deepEqual(past.body.overflows, [{ itemId: s.boltId, locationId: s.mainId, quantity: 999_999_999.999999, added: 0.000001, maximum: 999_999_999.999999 }]);
  t.is(pastByReceipt.status, 409, 'several levels at once: the one that would pass the maximum is named');
  t.deepEqual(pastByReceipt.body.overflows.map((o: { itemId: string }) => o.itemId), [s.boltId]);
  t.is(await level(s, s.nutId), 0.1);
  t.deepEqual(await ledgerMismatches(h.db, s.accountId), []);
});

import { randomBytes } from 'node:crypto';
import test from 'ava';
import { pruneIdempotencyKeys } from '../jobs/idempotency_keys__prune.ts';
import { SECRET_NOT_REPLAYED } from '../server/resources/webhooks/schema.ts';
import { apiRoutes } from '../server/routes.ts';
import type { Client, Response } from './helpers/client.ts';
import { tableCounts } from './helpers/counts.ts';
import { useHarness, type TestAccount } from './helpers/harness.ts';

// Serial: the tests compare row counts of the whole database.
const h = useHarness(test, { allowInsecureWebhookUrls: true });

interface Setup extends TestAccount {
  itemId: string;
  partId: string;
  mainId: string;
  backId: string;
  customerId: string;
}

async function setup(): Promise<Setup> {
  const account = await h.newAccount();
  const item = await account.api.post('/items', { sku: 'BOLT', name: 'Bolt', price: 0.4 });
  const part = await account.api.post('/items', { sku: 'PART', name: 'Part' });
  const main = await account.api.post('/locations', { name: 'Main', code: 'MAIN' });
  const back = await account.api.post('/locations', { name: 'Back', code: 'BACK' });
  const customer = await account.api.post('/customers', { name: 'Ada' });
  const s = { ...account, itemId: item.body.id, partId: part.body.id, mainId: main.body.id, backId: back.body.id, customerId: customer.body.id };
  for (const itemId of [s.itemId, s.partId]) await s.api.post('/stock-adjustments', { itemId, locationId: s.mainId, quantity: 100, reason: 'opening' });
  return s;
}

const created = async (response: Promise<Response>): Promise<string> => {
  const { status, body } = await response;
  if (status >= 300) throw new Error(`setup: ${status} ${JSON.stringify(body)}`);
  return body.id;
};
const salesOrder = (s: Setup) => created(s.api.post('/sales-orders', { customerId: s.customerId, lineItems: [{ itemId: s.itemId, quantity: 1 }] }));
const purchaseOrder = (s: Setup) => created(s.api.post('/purchase-orders', { supplierName: 'Acme', locationId: s.mainId, lines: [{ itemId: s.itemId, quantity: 5, unitCost: 0.1 }] }));
const webhook = (s: Setup) => created(s.api.post('/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['*'] }));

interface Scenario {
  /** The path and body of the POST, after making what it needs. */
  prepare(s: Setup): Promise<{ path: string; body?: unknown }>;
  /** The answer a retry gets, when it is not the first answer itself. */
  replayed?: (first: Record<string, unknown>) => unknown;
}

// A secret is shown once: a replay answers null in its place, with a notice.
const withoutSecret = (first: Record<string, unknown>) => ({ ...first, secret: null, notice: SECRET_NOT_REPLAYED });

// One per POST route: a new POST route fails 'every POST route has a scenario' until it is added here.
const scenarios: Record<string, Scenario> = {
  createItem: { prepare: async () => ({ path: '/items', body: { sku: 'NEW', name: 'New item', price: 1.5 } }) },
  createLocation: { prepare: async () => ({ path: '/locations', body: { name: 'Annex', code: 'ANNEX' } }) },
  createCustomer: { prepare: async () => ({ path: '/customers', body: { name: 'Grace', email: 'grace@example.com' } }) },
  createStockAdjustment: { prepare: async (s) => ({ path: '/stock-adjustments', body: { itemId: s.itemId, locationId: s.mainId, quantity: -3, reason: 'damaged' } }) },
  createStockAdjustmentBatch: {
    prepare: async (s) => ({ path: '/stock-adjustments/batch', body: { adjustments: [{ itemId: s.itemId, locationId: s.mainId, quantity: -1, reason: 'a' }, { sku: 'PART', locationId: s.backId, quantity: 2, reason: 'b' }] } }),
  },
  createStockCount: {
    prepare: async (s) => ({ path: '/stock-counts', body: { locationId: s.mainId, reason: 'cycle', lines: [{ itemId: s.itemId, countedQuantity: 90, expectedQuantity: 100 }] } }),
  },
  upsertItems: { prepare: async () => ({ path: '/items/batch', body: { items: [{ sku: 'BOLT', price: 0.5 }, { sku: 'NEWER', name: 'Newer' }] } }) },
  createStockTransfer: { prepare: async (s) => ({ path: '/stock-transfers', body: { itemId: s.itemId, fromLocationId: s.mainId, toLocationId: s.backId, quantity: 4 } }) },
  createSalesOrder: { prepare: async (s) => ({ path: '/sales-orders', body: { customerId: s.customerId, lineItems: [{ itemId: s.itemId, quantity: 2 }] } }) },
  fulfillSalesOrder: { prepare: async (s) => ({ path: `/sales-orders/${await salesOrder(s)}/fulfill`, body: { locationId: s.mainId } }) },
  cancelSalesOrder: { prepare: async (s) => ({ path: `/sales-orders/${await salesOrder(s)}/cancel` }) },
  createSalesFulfillment: {
    prepare: async (s) => ({ path: `/sales-orders/${await salesOrder(s)}/fulfillments`, body: { locationId: s.mainId, reference: 'UPS 1' } }),
  },
  reserveSalesOrder: { prepare: async (s) => ({ path: `/sales-orders/${await salesOrder(s)}/reserve`, body: { locationId: s.mainId } }) },
  createReservation: { prepare: async (s) => ({ path: '/reservations', body: { itemId: s.itemId, locationId: s.mainId, quantity: 2, reference: 'cart-7' } }) },
  createPurchaseOrder: { prepare: async (s) => ({ path: '/purchase-orders', body: { supplierName: 'Acme', locationId: s.mainId, lines: [{ itemId: s.itemId, quantity: 5, unitCost: 0.1 }] } }) },
  confirmPurchaseOrder: { prepare: async (s) => ({ path: `/purchase-orders/${await purchaseOrder(s)}/confirm` }) },
  holdPurchaseOrder: { prepare: async (s) => ({ path: `/purchase-orders/${await purchaseOrder(s)}/hold`, body: {} }) },
  closePurchaseOrder: {
    prepare: async (s) => {
      const id = await purchaseOrder(s);
      await s.api.post(`/purchase-orders/${id}/confirm`);
      return { path: `/purchase-orders/${id}/close` };
    },
  },
  createPurchaseReceipt: {
    prepare: async (s) => {
      const id = await purchaseOrder(s);
      await s.api.post(`/purchase-orders/${id}/confirm`);
      return { path: `/purchase-orders/${id}/receipts`, body: { reference: 'DN-7' } };
    },
  },
  cancelPurchaseOrder: { prepare: async (s) => ({ path: `/purchase-orders/${await purchaseOrder(s)}/cancel` }) },
  createProductionRecord: {
    prepare: async (s) => ({ path: '/production-records', body: { itemId: s.itemId, locationId: s.mainId, quantity: 2, components: [{ itemId: s.partId, quantity: 6 }] } }),
  },
  createWebhook: { prepare: async () => ({ path: '/webhooks', body: { url: 'http://127.0.0.1:9/other', events: ['stock.adjusted'] } }), replayed: withoutSecret },
  pingWebhook: { prepare: async (s) => ({ path: `/webhooks/${await webhook(s)}/ping` }) },
  redeliverWebhookEvent: {
    prepare: async (s) => {
      const id = await webhook(s);
      // From the table: /events may hold a new event back while another test file's transaction is open.
      const event = await h.db('events').where({ account_id: s.accountId, type: 'item.created' }).first('id');
      return { path: `/webhooks/${id}/redeliver`, body: { eventId: event.id } };
    },
  },
  rotateWebhookSecret: { prepare: async (s) => ({ path: `/webhooks/${await webhook(s)}/rotate-secret` }), replayed: withoutSecret },
};

const post = (api: Client, path: string, body: unknown, key: string) => api.post(path, body, { headers: { 'Idempotency-Key': key } });

test.serial('every POST route has a scenario below', (t) => {
  const posts = apiRoutes.filter((route) => route.method === 'post').map((route) => route.operationId);
  t.deepEqual(posts.filter((operationId) => !scenarios[operationId]), []);
});

for (const [operationId, scenario] of Object.entries(scenarios)) {
  test.serial(`${operationId}: a retry with the same key gets the identical answer, marked replayed, and changes nothing`, async (t) => {
    // Setup
    const s = await setup();
    const { path, body } = await scenario.prepare(s);
    const key = `retry-${operationId}`;

    // Action
    const first = await post(s.api, path, body, key);
    const after = await tableCounts(h.db);
    const second = await post(s.api, path, body, key);
    const third = await post(s.api, path, body, key);

    // Assertions
    t.true(first.status >= 200 && first.status < 300, JSON.stringify(first.body));
    t.is(first.headers.get('Idempotent-Replayed'), null);
    const expected = scenario.replayed?.(first.body) ?? first.body;
    for (const retry of [second, third]) {
      t.is(retry.status, first.status);
      t.deepEqual(retry.body, expected);
      t.is(JSON.stringify(retry.body), JSON.stringify(expected), 'the same keys in the same order');
      t.is(retry.headers.get('Idempotent-Replayed'), 'true');
      t.not(retry.headers.get('X-Request-Id'), first.headers.get('X-Request-Id'));
    }
    t.deepEqual(await tableCounts(h.db), after, 'no row (and no job) written by the retries');
  });
}

test.serial('one movement, one order and one delivery job: concurrent requests with one key have one effect', async (t) => {
  // Setup
  const s = await setup();
  const hook = await webhook(s);
  const before = await tableCounts(h.db);

  // Action
  const send = () => Promise.all([
    post(s.api, '/stock-adjustments', { itemId: s.itemId, locationId: s.mainId, quantity: 1, reason: 'found one' }, 'race-adjust'),
    post(s.api, '/sales-orders', { customerId: s.customerId, lineItems: [{ itemId: s.itemId, quantity: 1 }] }, 'race-order'),
    post(s.api, `/webhooks/${hook}/ping`, undefined, 'race-ping'),
  ]);
  const rounds = await Promise.all(Array.from({ length: 8 }, send));

  // Assertions
  for (const column of [0, 1, 2]) {
    const answers = rounds.map((round) => round[column]!);
    const succeeded = answers.filter((answer) => answer.status < 300);
    t.true(succeeded.length >= 1);
    t.is(new Set(succeeded.map((answer) => JSON.stringify(answer.body))).size, 1, 'every success is the one answer');
    t.is(succeeded.filter((answer) => answer.headers.get('Idempotent-Replayed') === null).length, 1, 'exactly one ran');
    for (const busy of answers.filter((answer) => answer.status >= 300)) {
      t.is(busy.status, 409);
      t.is(busy.headers.get('Retry-After'), '1');
      t.regex(busy.body.error, /still running/);
    }
  }
  const after = await tableCounts(h.db);
  t.is(after['public.stock_movements']! - before['public.stock_movements']!, 1);
  t.is(after['public.sales_orders']! - before['public.sales_orders']!, 1);
  t.is(after['public.events']! - before['public.events']!, 3, 'stock.adjusted, sales_order.created, webhook.ping');
});

test.serial('the same key with another body, path or method-and-path is a 409 naming the conflict; nothing is written', async (t) => {
  // Setup
  const s = await setup();
  const body = { itemId: s.itemId, locationId: s.mainId, quantity: 2, reason: 'count' };
  const first = await post(s.api, '/stock-adjustments', body, 'reused');
  const before = await tableCounts(h.db);

  // Action
  const sameBytes = await post(s.api, '/stock-adjustments', JSON.stringify(body), 'reused');
  const otherBody = await post(s.api, '/stock-adjustments', { ...body, quantity: 3 }, 'reused');
  const reordered = await post(s.api, '/stock-adjustments', { reason: body.reason, itemId: s.itemId, locationId: s.mainId, quantity: 2 }, 'reused');
  const otherPath = await post(s.api, '/locations', { name: 'Somewhere' }, 'reused');

  // Assertions
  t.is(first.status, 201);
  t.is(sameBytes.status, 201);
  t.is(sameBytes.headers.get('Idempotent-Replayed'), 'true');
  for (const conflict of [otherBody, reordered, otherPath]) {
    t.is(conflict.status, 409, 'the body is compared as sent, byte for byte');
    t.regex(conflict.body.error, /Idempotency-Key was already used with another request/);
  }
  t.deepEqual(await tableCounts(h.db), before);
});

test.serial('a request refused with a 4xx keeps no key: after fixing it, the same key runs it', async (t) => {
  // Setup
  const s = await setup();
  const take = { itemId: s.itemId, locationId: s.mainId, quantity: -500, reason: 'big order' };

  // Action
  const invalid = await post(s.api, '/stock-adjustments', { ...take, quantity: 'lots' }, 'fix-me');
  const fixed = await post(s.api, '/stock-adjustments', { ...take, quantity: -5 }, 'fix-me');
  const short = await post(s.api, '/stock-adjustments', take, 'short');
  await s.api.post('/stock-adjustments', { itemId: s.itemId, locationId: s.mainId, quantity: 500, reason: 'delivery' });
  const retried = await post(s.api, '/stock-adjustments', take, 'short');

  // Assertions
  t.is(invalid.status, 400);
  t.is(fixed.status, 201);
  t.is(fixed.headers.get('Idempotent-Replayed'), null);
  t.is(short.status, 409);
  t.is(retried.status, 201, 'the 409 was not stored: the retry ran against today\'s stock');
  t.is(retried.headers.get('Idempotent-Replayed'), null);
});

test.serial('keys belong to an account, may be 255 characters long, and are a 400 beyond that', async (t) => {
  // Setup
  const [a, b] = [await setup(), await setup()];
  const key = 'k'.repeat(255);

  // Action
  const first = await post(a.api, '/locations', { name: 'Same key' }, key);
  const other = await post(b.api, '/locations', { name: 'Same key' }, key);
  const tooLong = await post(a.api, '/locations', { name: 'Long key' }, `${key}k`);

  // Assertions
  t.is(first.status, 201);
  t.is(other.status, 201);
  t.is(other.headers.get('Idempotent-Replayed'), null);
  t.not(other.body.id, first.body.id);
  t.is(tooLong.status, 400);
  t.deepEqual(tooLong.body.errors, [{ path: 'Idempotency-Key', message: 'must be at most 255 characters' }]);
});

test.serial('a claim whose process died is waited for until its lock expires, then taken over; expired keys start afresh and are pruned', async (t) => {
  // Setup
  const s = await setup();
  const body = { name: 'Crash test' };
  const first = await post(s.api, '/locations', body, 'crashed');
  const row = () => h.db('idempotency_keys').where({ account_id: s.accountId, key: 'crashed' });
  // As a process that died after claiming the key: running, locked.
  await row().update({ state: 'running', response_status: null, response_body: null, locked_until: h.db.raw("now() + interval '1 minute'") });

  // Action and assertions: while locked, retry later.
  const locked = await post(s.api, '/locations', body, 'crashed');
  t.is(locked.status, 409);
  t.is(locked.headers.get('Retry-After'), '1');

  // The lock expired: the retry runs the request.
  await row().update({ locked_until: h.db.raw("now() - interval '1 second'") });
  const takenOver = await post(s.api, '/locations', body, 'crashed');
  t.is(takenOver.status, 201);
  t.is(takenOver.headers.get('Idempotent-Replayed'), null);
  t.not(takenOver.body.id, first.body.id);
  t.deepEqual(await post(s.api, '/locations', body, 'crashed').then((r) => r.body), takenOver.body);

  // After 24 hours the key is unused again, whatever the request, and the prune task deletes it.
  await row().update({ expires_at: h.db.raw("now() - interval '1 second'") });
  const afresh = await post(s.api, '/locations', { name: 'Another request' }, 'crashed');
  t.is(afresh.status, 201);
  await row().update({ expires_at: h.db.raw("now() - interval '1 second'") });
  const logged: string[] = [];
  await pruneIdempotencyKeys(h.db).run({}, { logger: { info: (message: string) => logged.push(message) } } as never);
  t.is(await row().first(), undefined);
  t.deepEqual(logged, ['pruned 1 expired Idempotency-Keys']);
});

test.serial('stored answers are encrypted at rest: the webhook secret is not in the table', async (t) => {
  // Setup
  const s = await setup();

  // Action
  const { body } = await post(s.api, '/webhooks', { url: 'http://127.0.0.1:9/secret', events: ['*'] }, 'secret');

  // Assertions
  const stored = await h.db('idempotency_keys').where({ account_id: s.accountId, key: 'secret' }).first();
  t.is(stored.state, 'done');
  t.is(stored.response_status, 201);
  t.false(stored.response_body.includes(body.secret));
  t.false(stored.response_body.includes(body.id));
});

test.serial('after ENCRYPTION_KEY changes, an answer stored under the old key counts as unused: the retry runs, no 500, logged once', async (t) => {
  // Setup: an answer stored by an app with this file's key, and an app with another key on the same database.
  const s = await setup();
  const first = await post(s.api, '/locations', { name: 'Before the change' }, 'rotated');
  t.is(first.status, 201);
  const rotated = await h.startApp({ encryptionKey: randomBytes(32) });
  const api = rotated.api(s.key);

  // Action: the same request twice, and another key's stored answer.
  const retried = await post(api, '/locations', { name: 'Before the change' }, 'rotated');
  const again = await post(api, '/locations', { name: 'Before the change' }, 'rotated');
  await post(s.api, '/locations', { name: 'Another' }, 'rotated-too');
  const other = await post(api, '/locations', { name: 'Another' }, 'rotated-too');

  // Assertions: each ran once more under the new key, then replays; one warning for all of it.
  t.is(retried.status, 201);
  t.is(retried.headers.get('Idempotent-Replayed'), null);
  t.not(retried.body.id, first.body.id);
  t.is(again.headers.get('Idempotent-Replayed'), 'true');
  t.deepEqual(again.body, retried.body);
  t.is(other.status, 201);
  t.is(rotated.logs.filter((line) => line.includes('stored under another ENCRYPTION_KEY')).length, 1);
});

test.serial('a replay of POST /webhooks or rotate-secret never shows the secret again, not even one rotated away since', async (t) => {
  // Setup
  const s = await setup();
  const created = await post(s.api, '/webhooks', { url: 'http://127.0.0.1:9/replayed', events: ['*'] }, 'create-hook');
  const rotated = await post(s.api, `/webhooks/${created.body.id}/rotate-secret`, undefined, 'rotate-hook');
  await s.api.post(`/webhooks/${created.body.id}/rotate-secret`);

  // Action
  const replays = [
    await post(s.api, '/webhooks', { url: 'http://127.0.0.1:9/replayed', events: ['*'] }, 'create-hook'),
    await post(s.api, `/webhooks/${created.body.id}/rotate-secret`, undefined, 'rotate-hook'),
  ];

  // Assertions
  for (const [index, replay] of replays.entries()) {
    const first = index === 0 ? created : rotated;
    t.is(replay.headers.get('Idempotent-Replayed'), 'true');
    t.is(replay.body.secret, null);
    t.is(replay.body.notice, SECRET_NOT_REPLAYED);
    t.false(JSON.stringify(replay.body).includes(first.body.secret.slice(6)));
  }
  const stored = await h.db('idempotency_keys').where({ account_id: s.accountId }).whereIn('key', ['create-hook', 'rotate-hook']).select('response_body');
  t.is(stored.length, 2);
});

test.serial('requests without a key, and GETs with one, are not recorded', async (t) => {
  // Setup
  const s = await setup();
  const before = await h.db('idempotency_keys').where({ account_id: s.accountId }).count({ n: '*' }).first();

  // Action
  const plain = await s.api.post('/locations', { name: 'Keyless' });
  const again = await s.api.post('/locations', { name: 'Keyless' });
  const get = await s.api.get('/locations', { headers: { 'Idempotency-Key': 'a-get' } });

  // Assertions
  t.is(plain.status, 201);
  t.is(again.status, 201);
  t.not(again.body.id, plain.body.id);
  t.is(get.status, 200);
  t.deepEqual(await h.db('idempotency_keys').where({ account_id: s.accountId }).count({ n: '*' }).first(), before);
});

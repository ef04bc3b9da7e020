// Bounded resources under hostile clients: bodies over the limit are refused unread, and a client that sends its
// request a byte at a time is cut off after REQUEST_TIMEOUT_MS. These speak raw HTTP on a socket, as such
// clients do; fetch would not send a body this way.
import { once } from 'node:events';
import { connect, type Socket } from 'node:net';
import test from 'ava';
import { tableCounts } from './helpers/counts.ts';
import { useHarness, type RunningApp } from './helpers/harness.ts';

const h = useHarness(test);

interface Conversation {
  socket: Socket;
  /** Everything the server sent so far. */
  received(): string;
  /** Resolves when the server closed the connection, with the milliseconds since it was opened. */
  closed: Promise<number>;
}

async function open(app: RunningApp, head: string): Promise<Conversation> {
  const { port } = new URL(app.baseUrl);
  const socket = connect(Number(port), '127.0.0.1');
  await once(socket, 'connect');
  const started = performance.now();
  let text = '';
  socket.on('data', (chunk) => { text += chunk; });
  // The server may close while we are still writing: that is the point, not a failure.
  socket.on('error', () => {});
  const closed = new Promise<number>((resolve) => socket.on('close', () => resolve(performance.now() - started)));
  socket.write(head);
  return { socket, received: () => text, closed };
}

const headers = (lines: string[]) => `${lines.join('\r\n')}\r\n\r\n`;

function statusAndBody(response: string): { status: number; body: Record<string, unknown> } {
  const [head = '', body = ''] = response.split('\r\n\r\n');
  return { status: Number(head.split(' ')[1]), body: JSON.parse(body) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Writes chunks one at a time, each flushed before the next, until the server answers or closes. A client that
 * kept writing into a closed connection would get a reset and could lose the answer; real clients read it too.
 */
async function sendUntilAnswered(conversation: Conversation, chunks: Iterable<string | Buffer>, pauseMs: number): Promise<number> {
  let sent = 0;
  let open = true;
  void conversation.closed.then(() => { open = false; });
  for (const chunk of chunks) {
    if (!open || conversation.received()) break;
    await new Promise<void>((resolve) => conversation.socket.write(chunk, () => resolve()));
    sent += chunk.length;
    await sleep(pauseMs);
  }
  return sent;
}

test.serial('a body declared as 100 MB is refused with 413 before a byte of it is read, before its key is looked up, and the connection is closed', async (t) => {
  // Setup
  const { key } = await h.newAccount();
  const before = await tableCounts(h.db);

  for (const apiKey of [key, 'not-a-key']) {
    // Action: the headers only; the server must not wait for the body to refuse it.
    const conversation = await open(h.app, headers([
      'POST /rest/api/v2/items HTTP/1.1', 'Host: localhost', `X-API-Key: ${apiKey}`, 'Content-Type: application/json',
      `Content-Length: ${100 * 1024 * 1024}`,
    ]));
    const closedAfter = await conversation.closed;

    // Assertions
    const { status, body } = statusAndBody(conversation.received());
    t.is(status, 413);
    t.deepEqual(body, { error: 'Request body is too large' });
    t.regex(conversation.received(), /Connection: close/i);
    t.true(closedAfter < 5000, `closed after ${closedAfter} ms`);
  }
  t.deepEqual(await tableCounts(h.db), before);
});

test.serial('a chunked body is counted as it arrives: past the limit it is a 413 and the connection closes, however much more was coming', async (t) => {
  // Setup
  const { key } = await h.newAccount();
  const conversation = await open(h.app, headers([
    'POST /rest/api/v2/items HTTP/1.1', 'Host: localhost', `X-API-Key: ${key}`, 'Content-Type: application/json', 'Transfer-Encoding: chunked',
  ]));

  // Action: 64 KB chunks, up to 3 MB against the 1 MB limit, never finishing the body.
  const chunk = Buffer.alloc(64 * 1024, ' ');
  const chunks = Array.from({ length: 48 }, () => Buffer.concat([Buffer.from(`${chunk.length.toString(16)}\r\n`), chunk, Buffer.from('\r\n')]));
  const sent = await sendUntilAnswered(conversation, chunks, 5);
  await conversation.closed;

  // Assertions
  const { status, body } = statusAndBody(conversation.received());
  t.is(status, 413);
  t.deepEqual(body, { error: 'Request body is too large' });
  t.true(sent < 3 * 1024 * 1024, `the server answered after ${sent} bytes`);
});

test.serial('a client sending its body a byte at a time is answered 408 and cut off after REQUEST_TIMEOUT_MS', async (t) => {
  // Setup
  const app = await h.startApp({ requestTimeoutMs: 1000 });
  const { key } = await h.newAccount();
  const body = JSON.stringify({ sku: 'SLOW', name: 'Slowly sent item' });
  const conversation = await open(app, headers([
    'POST /rest/api/v2/items HTTP/1.1', 'Host: localhost', `X-API-Key: ${key}`, 'Content-Type: application/json', `Content-Length: ${body.length}`,
  ]));

  // Action: one byte every 200 ms would take ~8 s.
  const sent = await sendUntilAnswered(conversation, body, 200);
  const closedAfter = await conversation.closed;

  // Assertions
  t.true(sent < body.length, 'cut off before the body was complete');
  t.true(closedAfter >= 900 && closedAfter < 3500, `closed after ${Math.round(closedAfter)} ms`);
  const { status, body: answer } = statusAndBody(conversation.received());
  t.is(status, 408);
  t.deepEqual(answer, { error: 'The request did not arrive in time' });
  t.is(await h.db('items').where({ sku: 'SLOW' }).first(), undefined);
});

test.serial('a request that arrives in time is unaffected by the timeout', async (t) => {
  // Setup
  const app = await h.startApp({ requestTimeoutMs: 1000 });
  const { key } = await h.newAccount();

  // Action
  const { status } = await app.api(key).post('/items', { sku: 'QUICK', name: 'Quick' });

  // Assertions
  t.is(status, 201);
});

test.serial('bodies nested deeper than 32 levels, and inherited names as keys, are 400s naming the problem', async (t) => {
  // Setup
  const { api } = await h.newAccount();

  // Action
  const deep = await api.post('/locations', `{"name":"x","code":${'['.repeat(33)}${']'.repeat(33)}}`);
  const inherited = await api.post('/locations', '{"name":"x","constructor":{"prototype":1},"address":{"toString":"x"}}');
  const notEmpty = await api.post(`/sales-orders/${'3f8e2c1a-6b7d-4e9f-9a21-5c0d8e7b6a14'}/cancel`, { reason: 'ignored?' });

  // Assertions
  t.is(deep.status, 400);
  t.deepEqual(deep.body.errors, [{ path: 'body', message: 'must not nest objects and arrays more than 32 deep' }]);
  t.is(inherited.status, 400);
  t.deepEqual(inherited.body.errors, [
    { path: 'constructor', message: 'is not an allowed field' },
    { path: 'address.toString', message: 'is not an allowed field' },
  ]);
  t.is(notEmpty.status, 400, 'a route without a body refuses one rather than ignoring it');
  t.deepEqual(notEmpty.body.errors, [{ path: 'body', message: 'must be empty: this operation takes no body' }]);
});

test.serial('an array longer than the route allows is refused before its entries are checked: 200,000 numbers as lineItems is one small 400, not a 500', async (t) => {
  // Setup
  const { api, accountId } = await h.newAccount();
  const before = await tableCounts(h.db);

  // Action: under the body limit, each entry of the wrong type.
  const body = `{"customerId":"x","lineItems":[${Array(200_000).fill('0').join(',')}]}`;
  const response = await api.post('/sales-orders', body);

  // Assertions
  t.is(response.status, 400);
  t.deepEqual(response.body, { error: 'Validation failed', errors: [{ path: 'lineItems', message: 'must have at most 1000 entries' }] });
  t.deepEqual(await tableCounts(h.db), before);
  t.truthy(accountId);
});

test.serial('a 400 names at most 100 problems and counts the rest in omittedErrors: never megabytes of errors', async (t) => {
  // Setup
  const { api } = await h.newAccount();

  // Action: 1,000 lines (the most an order may have), each with two problems.
  const lines = Array.from({ length: 1000 }, () => ({ itemId: 7, quantity: 'many' }));
  const response = await api.post('/sales-orders', { customerId: 'x', lineItems: lines });

  // Assertions
  t.is(response.status, 400);
  t.is(response.body.errors.length, 100);
  t.deepEqual(response.body.errors.slice(0, 2), [
    { path: 'lineItems[0].itemId', message: 'must be a string' },
    { path: 'lineItems[0].quantity', message: 'must be a number' },
  ]);
  t.is(response.body.omittedErrors, 1901, "2,000 line problems and the unknown customer, less the 100 named");
  t.true(JSON.stringify(response.body).length < 10_000);
});

test.serial('more unknown fields than a 400 names are one problem, found before validation', async (t) => {
  // Setup
  const { api } = await h.newAccount();

  // Action
  const manyFields = Object.fromEntries(Array.from({ length: 50_000 }, (_, i) => [`field${i}`, i]));
  const spread = Array.from({ length: 1000 }, () => ({ itemId: 'x', quantity: 1, a: 1, b: 2 }));
  const flat = await api.post('/locations', { name: 'x', ...manyFields });
  const nested = await api.post('/sales-orders', { customerId: 'x', lineItems: spread });

  // Assertions
  t.deepEqual(flat.body.errors, [{ path: 'body', message: 'has 50000 fields that are not allowed (the first at field0)' }]);
  t.deepEqual(nested.body.errors, [{ path: 'body', message: 'has 2000 fields that are not allowed (the first at lineItems[0].a)' }]);
});

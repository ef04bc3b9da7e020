import { randomUUID } from 'node:crypto';
import net from 'node:net';
import test from 'ava';
import { useHarness, type RunningApp } from './helpers/harness.ts';
import { parsePrometheus } from './helpers/prometheus.ts';
import { eventually } from './helpers/eventually.ts';

const h = useHarness(test);
const TOKEN = 'metrics-token-0123456789abcdef';
let app: RunningApp;

test.before(async () => {
  app = await h.startApp({ metricsToken: TOKEN, allowInsecureWebhookUrls: true });
});

const scrape = async (target = app) => {
  const response = await target.api().get('~/metrics', { headers: { Authorization: `Bearer ${TOKEN}` } });
  return { ...response, metrics: response.status === 200 ? parsePrometheus(response.body) : undefined };
};

test('without METRICS_TOKEN there is no /metrics; with it, only the bearer of the token sees it', async (t) => {
  const bearer = { Authorization: `Bearer ${TOKEN}` };
  t.is((await h.app.api().get('~/metrics', { headers: bearer })).status, 404, 'the default app has no token');
  const refusals: Array<Record<string, string>> = [{}, { Authorization: 'Bearer wrong-token-0123456789abcdef' }, { Authorization: TOKEN }, { Authorization: `Basic ${TOKEN}` }];
  for (const headers of refusals) {
    const response = await app.api().get('~/metrics', { headers });
    t.is(response.status, 404, JSON.stringify(headers));
    t.deepEqual(response.body, { error: 'No route for GET /metrics' }, 'the answer to any path that does not exist');
  }
  const { status, headers, metrics } = await scrape();
  t.is(status, 200);
  t.regex(headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  t.is(headers.get('cache-control'), 'no-store');
  t.true((metrics!.value('process_resident_memory_bytes') ?? 0) > 0, 'Node\'s default process metrics');
  t.is(metrics!.types.get('nodejs_eventloop_lag_seconds'), 'gauge');
});

test.serial('requests are counted and timed by route template and status, never by raw path', async (t) => {
  const { key } = await h.newAccount();
  const before = (await scrape()).metrics!;
  const mine = app.api(key);
  const missing = [randomUUID(), randomUUID(), randomUUID()];
  for (const id of missing) t.is((await mine.get(`/items/${id}`)).status, 404);
  t.is((await mine.post('/items', { sku: `M-${randomUUID()}`, name: 'Counted' })).status, 201);
  t.is((await app.api('not-a-key').get(`/items/${missing[0]}`)).status, 401, 'refused before the router ran: still its template');
  t.is((await mine.get(`/nowhere/${missing[0]}`)).status, 404);

  const { body, metrics } = await scrape();
  const increase = (name: string, labels: Record<string, string>) => (metrics!.value(name, labels) ?? 0) - (before.value(name, labels) ?? 0);
  const byId = { method: 'GET', route: '/rest/api/v2/items/:id' };
  t.is(increase('http_requests_total', { ...byId, status: '404' }), 3);
  t.is(increase('http_request_duration_seconds_count', { ...byId, status: '404' }), 3);
  t.is(increase('http_request_duration_seconds_bucket', { ...byId, status: '404', le: '+Inf' }), 3);
  t.is(increase('http_requests_total', { ...byId, status: '401' }), 1);
  t.is(increase('http_requests_total', { method: 'POST', route: '/rest/api/v2/items', status: '201' }), 1);
  t.is(increase('http_requests_total', { method: 'GET', route: 'unmatched', status: '404' }), 1);
  t.is(metrics!.types.get('http_request_duration_seconds'), 'histogram');
  for (const id of missing) t.false(body.includes(id), 'no series is named after an id');

  for (const state of ['used', 'free', 'pending']) t.true(metrics!.value('stockroom_db_pool_connections', { state })! >= 0, state);
  t.true(metrics!.value('stockroom_db_pool_connections', { state: 'free' })! + metrics!.value('stockroom_db_pool_connections', { state: 'used' })! >= 1);
});

test('the webhook pipeline as PostgreSQL sees it, read at most once every 5 seconds', async (t) => {
  // No worker runs in this file: what is enqueued stays queued.
  const { accountId, key } = await h.newAccount();
  const api = app.api(key);
  const hook = (await api.post('/webhooks', { url: 'http://127.0.0.1:9/hook', events: ['*'] })).body;
  const other = (await api.post('/webhooks', { url: 'http://127.0.0.1:9/other', events: ['*'] })).body;
  t.is((await api.patch(`/webhooks/${other.id}`, { enabled: false })).status, 200);
  await h.db('webhook_deliveries').insert(['succeeded', 'succeeded', 'failed'].map((outcome, attempt) => ({
    account_id: accountId,
    webhook_id: hook.id, event_id: randomUUID(), event_type: 'item.created', attempt, outcome, duration_ms: 5,
  })));
  const waitingBefore = Number((await h.db.raw(`select count(*)::int as n from graphile_worker.jobs where task_identifier = 'events__dispatch'`)).rows[0].n);
  for (let n = 0; n < 3; n += 1) t.is((await api.post('/items', { sku: `P-${n}-${randomUUID()}`, name: 'Waits' })).status, 201);
  const first = await h.db('events').where({ account_id: accountId, type: 'item.created' }).first('id');
  await h.db('events').where({ id: first.id }).update({ created_at: h.db.raw(`now() - interval '10 minutes'`) });

  await new Promise((resolve) => setTimeout(resolve, 5000));
  const { metrics } = await scrape();
  t.true(metrics!.value('stockroom_events_undelivered')! >= waitingBefore + 3);
  t.true(metrics!.value('stockroom_oldest_undelivered_event_age_seconds')! >= 600, 'the event made 10 minutes ago waits');
  t.true(metrics!.value('stockroom_jobs', { task: 'events__dispatch', state: 'queued' })! >= waitingBefore + 3);
  t.is(metrics!.value('stockroom_webhook_attempts_last_minute', { outcome: 'succeeded' }), 2);
  t.is(metrics!.value('stockroom_webhook_attempts_last_minute', { outcome: 'failed' }), 1);
  t.is(metrics!.value('stockroom_webhooks_disabled', { reason: 'manual' }), 1);
  t.is(metrics!.value('stockroom_database_metrics_up'), 1);

  // Within the 5 seconds, scrapes reuse that read: new events are not seen yet.
  const undelivered = metrics!.value('stockroom_events_undelivered')!;
  t.is((await api.post('/items', { sku: `P-late-${randomUUID()}`, name: 'Later' })).status, 201);
  const again = await Promise.all([scrape(), scrape(), scrape()]);
  for (const { metrics: next } of again) t.is(next!.value('stockroom_events_undelivered'), undelivered);
});

test.serial('a client that hangs up before its body is read is no server error', async (t) => {
  // The key is looked up before the body is read: a client gone by then leaves a request with nothing to read.
  const { key } = await h.newAccount();
  const before = (await scrape()).metrics!;
  const { hostname, port } = new URL(app.baseUrl);
  const HANGUPS = 20;
  for (let n = 0; n < HANGUPS; n += 1) {
    const socket = net.connect(Number(port), hostname);
    await new Promise((resolve) => socket.once('connect', resolve));
    socket.write(`POST /rest/api/v2/items HTTP/1.1\r\nHost: ${hostname}\r\nX-API-Key: ${key}\r\nContent-Type: application/json\r\nContent-Length: 40\r\n\r\n`);
    socket.destroy();
  }
  const route = { method: 'POST', route: '/rest/api/v2/items' };
  const increase = (metrics: ReturnType<typeof parsePrometheus>, status: string) =>
    (metrics.value('http_requests_total', { ...route, status }) ?? 0) - (before.value('http_requests_total', { ...route, status }) ?? 0);
  let after = before;
  t.true(await eventually(async () => {
    after = (await scrape()).metrics!;
    return increase(after, '400') + increase(after, '500') >= HANGUPS;
  }), 'every request was answered');
  t.is(increase(after, '500'), 0, 'none answered as a server fault');
  t.is(increase(after, '400'), HANGUPS);
});

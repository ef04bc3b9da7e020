// GET /metrics in Prometheus's text format, for an ops team's scraper: requests by route template and status, the
// database pool, and what PostgreSQL says of the webhook pipeline, read at most once every 5 seconds however
// often and by however many scrapers it is asked. Only when METRICS_TOKEN is set, and only to a request bearing it:
// to anyone else the path does not exist.
import { timingSafeEqual } from 'node:crypto';
import { createRequire } from 'node:module';
import type Router from '@koa/router';
import type { Knex } from 'knex';
import type { Middleware } from 'koa';
import type * as PromClient from 'prom-client';
import type { Gauge } from 'prom-client';
import { DELIVER_WEBHOOK_TASK, DISPATCH_EVENT_TASK } from '../shared/events.ts';
import type { Logger } from '../shared/logger.ts';
import type { AppContext, AppState } from './framework/context.ts';

export const METRICS_PATH = '/metrics';
/** How long what PostgreSQL said is reused. */
const DATABASE_METRICS_TTL_MS = 5000;

interface PipelineState {
  undelivered: number;
  oldestUndeliveredAgeS: number;
  attempts: Array<{ outcome: string; n: number }>;
  jobs: Array<{ task: string; state: string; n: number }>;
  disabled: Array<{ reason: string; n: number }>;
}

/**
 * The webhook pipeline as the job queue holds it: an event waits for delivery while its fan-out job, or a
 * delivery job of it, is queued (the queue holds only work to do, so this reads a few rows, never the event log).
 */
async function readPipeline(db: Knex): Promise<PipelineState> {
  const { rows: [state] } = await db.raw<{ rows: [PipelineState] }>(`
    with waiting as (
      select distinct (j.payload->>'eventId')::uuid as event_id
      from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
      where t.identifier in (:dispatch, :deliver) and j.attempts < j.max_attempts
    )
    select
      (select count(*) from waiting)::int as undelivered,
      coalesce((select extract(epoch from now() - min(e.created_at)) from events e where e.id in (select event_id from waiting)), 0)::float
        as "oldestUndeliveredAgeS",
      (select coalesce(json_agg(a), '[]') from (
        select outcome, count(*)::int as n from webhook_deliveries where created_at > now() - interval '1 minute' group by outcome) a) as attempts,
      (select coalesce(json_agg(q), '[]') from (
        select t.identifier as task,
               case when j.attempts >= j.max_attempts then 'failed' when j.locked_at is not null then 'locked' else 'queued' end as state,
               count(*)::int as n
        from graphile_worker._private_jobs j join graphile_worker._private_tasks t on t.id = j.task_id
        group by 1, 2) q) as jobs,
      (select coalesce(json_agg(w), '[]') from (
        select disabled_reason as reason, count(*)::int as n from webhooks where not enabled group by 1) w) as disabled`,
  { dispatch: DISPATCH_EVENT_TASK, deliver: DELIVER_WEBHOOK_TASK });
  return state;
}

/** Reads at most once per `ttlMs`; scrapes meanwhile, and those that arrive while it reads, share the answer. */
function cached<T>(read: () => Promise<T>, ttlMs: number): () => Promise<T> {
  let last: { at: number; value: Promise<T> } | undefined;
  return () => {
    const now = performance.now();
    if (!last || now - last.at >= ttlMs) {
      const value = read();
      last = { at: now, value };
      // A failed read is not kept: the next scrape asks again.
      value.catch(() => { if (last?.value === value) last = undefined; });
    }
    return last.value;
  };
}

export interface Metrics {
  /** Times and counts every request; first in the chain, so that it sees every answer. */
  observe: Middleware<AppState>;
  /** Answers GET /metrics to the bearer of the token; passes everything else on. */
  serve: Middleware<AppState>;
}

/** The route template a request matched, found again when a middleware answered before the router ran. */
export type RouteOf = (ctx: AppContext) => string;

export function routeTemplate(routers: Array<Router<AppState>>): RouteOf {
  return (ctx) => {
    const matched = (ctx as { _matchedRoute?: string | RegExp })._matchedRoute;
    if (matched !== undefined) return String(matched);
    for (const router of routers) {
      const { pathAndMethod } = router.match(ctx.path, ctx.method);
      const layer = pathAndMethod.at(-1);
      if (layer) return String(layer.path);
    }
    // Never the raw path: every mistyped or probing URL would be a series of its own.
    return 'unmatched';
  };
}

export function createMetrics(options: { token: string; db: Knex; logger: Logger; routeOf: RouteOf }): Metrics {
  const { db, logger, routeOf } = options;
  // Loaded here, not imported at the top: prom-client costs a process about 20 MB, which one without METRICS_TOKEN
  // should not pay.
  const { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } = createRequire(import.meta.url)('prom-client') as typeof PromClient;
  const register = new Registry();
  collectDefaultMetrics({ register });

  const labelNames = ['method', 'route', 'status'] as const;
  const requests = new Counter({ name: 'http_requests_total', help: 'Requests answered, by route template and status', labelNames, registers: [register] });
  const durations = new Histogram({
    name: 'http_request_duration_seconds', help: 'Time to answer, by route template and status', labelNames, registers: [register],
    buckets: [0.002, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  });

  const pool = (db.client as { pool?: { numUsed(): number; numFree(): number; numPendingAcquires(): number; numPendingCreates(): number } }).pool;
  new Gauge({
    name: 'stockroom_db_pool_connections', help: 'The web process\'s database connections: used, free, and requests waiting for one (pending)',
    labelNames: ['state'], registers: [register],
    collect() {
      this.set({ state: 'used' }, pool?.numUsed() ?? 0);
      this.set({ state: 'free' }, pool?.numFree() ?? 0);
      this.set({ state: 'pending' }, (pool?.numPendingAcquires() ?? 0) + (pool?.numPendingCreates() ?? 0));
    },
  });

  // A failed read is logged once, not once per gauge that asked for it.
  const pipeline = cached(() => readPipeline(db).catch((error: unknown) => {
    logger.warn({ err: error }, 'metrics: could not read the webhook pipeline from the database');
    throw error;
  }), DATABASE_METRICS_TTL_MS);
  new Gauge({
    name: 'stockroom_database_metrics_up', help: '1 when the read of the database metrics for this scrape succeeded', registers: [register],
    async collect() {
      this.set(await pipeline().then(() => 1, () => 0));
    },
  });
  /** A gauge whose values come from the cached read; on a failed read it keeps its last values (and _up says 0). */
  const fromDatabase = (name: string, help: string, labelNames: string[], fill: (gauge: Gauge, state: PipelineState) => void) => new Gauge({
    name, help, labelNames, registers: [register],
    async collect() {
      const state = await pipeline().catch(() => undefined);
      if (!state) return;
      this.reset();
      fill(this, state);
    },
  });
  fromDatabase('stockroom_events_undelivered', 'Events with a delivery still queued (fan-out or webhook attempt)', [],
    (gauge, state) => gauge.set(state.undelivered));
  fromDatabase('stockroom_oldest_undelivered_event_age_seconds', 'Age of the oldest event with a delivery still queued (0 when none)', [],
    (gauge, state) => gauge.set(state.oldestUndeliveredAgeS));
  fromDatabase('stockroom_webhook_attempts_last_minute', 'Webhook delivery attempts in the last minute, by outcome', ['outcome'], (gauge, state) => {
    for (const outcome of ['succeeded', 'failed']) gauge.set({ outcome }, state.attempts.find((row) => row.outcome === outcome)?.n ?? 0);
  });
  fromDatabase('stockroom_jobs', 'graphile-worker jobs by task and state: queued, locked (running), failed (for good)', ['task', 'state'], (gauge, state) => {
    for (const row of state.jobs) gauge.set({ task: row.task, state: row.state }, row.n);
  });
  fromDatabase('stockroom_webhooks_disabled', 'Disabled webhook subscriptions, by reason (manual, gone, failing)', ['reason'], (gauge, state) => {
    for (const reason of ['manual', 'gone', 'failing']) gauge.set({ reason }, state.disabled.find((row) => row.reason === reason)?.n ?? 0);
  });

  const expected = Buffer.from(`Bearer ${options.token}`);
  const authorised = (header: string) => {
    const given = Buffer.from(header);
    return given.length === expected.length && timingSafeEqual(given, expected);
  };

  return {
    async observe(ctx, next) {
      const stop = durations.startTimer();
      try {
        await next();
      } finally {
        const labels = { method: ctx.method, route: routeOf(ctx), status: String(ctx.status) };
        stop(labels);
        requests.inc(labels);
      }
    },
    async serve(ctx, next) {
      if (ctx.path !== METRICS_PATH || ctx.method !== 'GET' || !authorised(ctx.get('Authorization'))) return next();
      ctx.set('Cache-Control', 'no-store');
      ctx.type = register.contentType;
      ctx.body = await register.metrics();
    },
  };
}

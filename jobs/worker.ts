import { EventEmitter } from 'node:events';
import { run, type Runner, type WorkerEvents } from 'graphile-worker';
import pg from 'pg';
import { connectionSettings } from '../db/connection.ts';
import { createDb } from '../db/knex.ts';
import type { Config } from '../shared/config.ts';
import { DELIVER_WEBHOOK_TASK, DISPATCH_EVENT_TASK } from '../shared/events.ts';
import { EXPIRE_RESERVATION_TASK } from '../shared/stock.ts';
import type { Logger } from '../shared/logger.ts';
import { toWorkerLogger } from '../shared/worker-logger.ts';
import { guardedLookup, systemResolve, type ResolveHost } from '../shared/webhook-urls.ts';
import { makeDispatchEvent } from './events__dispatch.ts';
import { startHeartbeat } from './heartbeat.ts';
import { createDeliveries } from './deliveries.ts';
import { createPoster } from './http-post.ts';
import { createOriginSlots } from './origin-slots.ts';
import { makeDeliverWebhook } from './webhooks__deliver.ts';
import { pruneDeliveryLog } from './delivery_log__prune.ts';
import { pruneEvents } from './events__prune.ts';
import { pruneIdempotencyKeys } from './idempotency_keys__prune.ts';
import { makeExpireReservation } from './reservations__expire.ts';

export interface Worker {
  /** Stops taking jobs and waits for the running ones; unfinished jobs are released for another worker. */
  stop(): Promise<void>;
}

export interface WorkerOptions {
  /** How receivers' names resolve (tests give a fixed answer). */
  resolveHost?: ResolveHost;
  /** The retry schedule in milliseconds, for tests. */
  retryDelaysMs?: number[];
}

export async function startWorker(config: Config, connectionString: string, logger: Logger, options: WorkerOptions = {}): Promise<Worker> {
  if (!config.encryptionKey) throw new Error('ENCRYPTION_KEY is not set: the worker needs it to sign webhook deliveries');
  // Connections do not grow with WORKER_CONCURRENCY: the tasks' statements are batched (see batched.ts).
  const db = createDb(connectionString, config.dbPoolMax, logger);
  const poster = createPoster({
    timeoutMs: config.webhookTimeoutMs,
    // In development receivers may live on this machine; otherwise only public addresses are connected to.
    lookup: config.allowInsecureWebhookUrls ? undefined : guardedLookup(options.resolveHost ?? systemResolve),
  });
  const deliveries = createDeliveries({
    db, poster,
    originSlots: createOriginSlots(config.webhookMaxPerOrigin, config.webhookTimeoutMs),
    secretKey: config.encryptionKey,
    timeoutMs: config.webhookTimeoutMs,
    allowInsecure: config.allowInsecureWebhookUrls,
    allowedPorts: config.webhookAllowedPorts,
    retryDelaysMs: options.retryDelaysMs,
  });
  const prunes = [pruneDeliveryLog(db), pruneIdempotencyKeys(db), pruneEvents(db, { days: config.eventRetentionDays })];
  const workerIds: string[] = [];
  const events: WorkerEvents = new EventEmitter();
  events.on('pool:create', ({ workerPool }) => workerIds.push(workerPool.id));

  // graphile-worker stops listening for its pool's errors before it is done with the pool, so an idle connection
  // dropped in between (PostgreSQL stopping with us, say) would crash the process: this pool is ours, listened to
  // until we close it. Its connections open as needed, graphile-worker's own few (listening for jobs, fetching,
  // completing and failing them in batches); the size matches the concurrency only because graphile-worker warns
  // about anything smaller.
  const pgPool = new pg.Pool({ ...await connectionSettings(connectionString), max: config.workerConcurrency });
  const connectionFailed = (error: Error) => logger.warn({ err: error }, 'a database connection of the worker failed');
  pgPool.on('error', connectionFailed);
  pgPool.on('connect', (client) => client.on('error', connectionFailed));
  const runner: Runner = await run({
    pgPool,
    concurrency: config.workerConcurrency,
    preset: {
      worker: {
        // Jobs are fetched in batches: a delivery costs the queue a fraction of a round trip. A batch stays locked
        // by this pool until it is done; if the process dies, heartbeat.ts releases it.
        localQueue: { size: config.workerConcurrency * 4 },
        // Completions are batched over one tick, and flushed on stop: unbatched, graphile-worker 0.18 does not wait
        // for the last completions when it stops, leaving those jobs locked until the heartbeat sweep. A crash can
        // lose at most one tick's completions, and every task is safe to run again.
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0,
      },
    },
    // Signals are handled by our own shutdown so that the worker stops before the database pool closes.
    noHandleSignals: true,
    // On stop, deliveries still running after half the shutdown time are aborted and handed to another worker
    // at once (see jobs/deliveries.ts), so that the process exits within SHUTDOWN_TIMEOUT_MS.
    gracefulShutdownAbortTimeout: Math.floor(config.shutdownTimeoutMs / 2),
    logger: toWorkerLogger(logger),
    events,
    taskList: {
      [DISPATCH_EVENT_TASK]: makeDispatchEvent(db, deliveries, config.webhookTimeoutMs),
      [DELIVER_WEBHOOK_TASK]: makeDeliverWebhook(db, deliveries, config.webhookTimeoutMs),
      [EXPIRE_RESERVATION_TASK]: makeExpireReservation(db),
      ...Object.fromEntries(prunes.map((prune) => [prune.task, prune.run])),
    },
    // Given inline, so graphile-worker never looks for a ./crontab file.
    crontab: prunes.map((prune) => `${prune.schedule} ${prune.task}`).join('\n'),
  });
  const heartbeat = startHeartbeat(db, () => workerIds, logger);
  return {
    async stop() {
      await runner.stop();
      await heartbeat.stop();
      poster.close();
      await pgPool.end();
      await db.destroy();
    },
  };
}

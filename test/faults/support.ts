// What the fault tests share: a PostgreSQL of their own (one they may stop), local webhook receivers that the
// worker processes reach over real HTTP, load loops, and the consistency check run as the command it is.
import { once } from 'node:events';
import { rm } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Knex } from 'knex';
import { startEmbeddedPostgres, type EmbeddedServer } from '../../db/embedded.ts';
import { migrateLatest } from '../../db/migrations/index.ts';
import { createAccount, createApiKey } from '../../db/accounts.ts';
import { freePort } from '../helpers/database.ts';
import { startProcess, type Started } from '../helpers/processes.ts';

export interface OwnPostgres {
  url: string;
  stop(): Promise<void>;
  /** Starts it again on the same port and data folder. */
  start(): Promise<void>;
  /** Stops it (if running) and removes its data folder. */
  destroy(): Promise<void>;
}

/** An embedded PostgreSQL for one test file alone, so that stopping it disturbs no other file. */
export async function ownPostgres(label: string): Promise<OwnPostgres> {
  const dataDir = join(tmpdir(), `stockroom-faults-${label}-${process.pid}-${Date.now()}`);
  const port = await freePort();
  let server: EmbeddedServer | undefined = await startEmbeddedPostgres({ dataDir, port });
  await server.ensureDatabase('stockroom');
  const url = server.urlFor('stockroom');
  await migrateLatest(url);
  return {
    url,
    async stop() {
      await server?.stop();
      server = undefined;
    },
    async start() {
      server = await startEmbeddedPostgres({ dataDir, port });
    },
    async destroy() {
      await server?.stop();
      server = undefined;
      await rm(dataDir, { recursive: true, force: true });
    },
  };
}

export async function newKey(db: Knex): Promise<{ accountId: string; key: string }> {
  const { accountId } = await createAccount(db, 'Fault test account', 'faults@example.com');
  const { key } = await createApiKey(db, { accountId, email: 'faults@example.com', label: 'faults' });
  return { accountId, key };
}

/** What a receiver does with one request: answer 2xx now, answer after a delay, or never answer. */
export type Behaviour = { status: number; delayMs?: number } | 'hang';

export interface LocalReceiver {
  url: string;
  /** Requests per webhook-id. */
  arrivals: Map<string, number>;
  /** 2xx answers fully sent, per webhook-id. */
  acknowledged: Map<string, number>;
  close(): void;
}

export async function localReceiver(behave: (eventId: string) => Behaviour = () => ({ status: 200 })): Promise<LocalReceiver> {
  const arrivals = new Map<string, number>();
  const acknowledged = new Map<string, number>();
  const bump = (map: Map<string, number>, id: string) => map.set(id, (map.get(id) ?? 0) + 1);
  const server = http.createServer((request, response) => {
    const id = String(request.headers['webhook-id']);
    bump(arrivals, id);
    request.resume();
    const behaviour = behave(id);
    if (behaviour === 'hang') return;
    const answer = () => {
      response.on('finish', () => { if (behaviour.status < 300) bump(acknowledged, id); });
      response.writeHead(behaviour.status).end('ok');
    };
    if (behaviour.delayMs) setTimeout(answer, behaviour.delayMs);
    else answer();
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    arrivals,
    acknowledged,
    close: () => { server.closeAllConnections(); server.close(); },
  };
}

export const startWeb = (databaseUrl: string, env: Record<string, string> = {}): Promise<Started> =>
  startProcess('server/main.ts', 'web listening', { DATABASE_URL: databaseUrl, RATE_LIMIT_PER_KEY: '1000000', ALLOW_INSECURE_WEBHOOK_URLS: 'true', ...env });

export const startWorkerProcess = (databaseUrl: string, env: Record<string, string> = {}): Promise<Started> =>
  startProcess('jobs/main.ts', 'worker started', { DATABASE_URL: databaseUrl, ALLOW_INSECURE_WEBHOOK_URLS: 'true', ...env });

export const baseUrlOf = (web: Started) => `http://127.0.0.1:${web.readyLine.port as number}`;

export { runConsistencyCheck } from '../helpers/consistency.ts';

export interface LoadResult {
  status: number;
  ms: number;
  at: number;
}

/** Runs `request` in `concurrency` loops until `stop()` resolves; every answer is recorded with when it came. */
export async function load(concurrency: number, until: Promise<unknown>, request: (n: number) => Promise<number>): Promise<LoadResult[]> {
  let stopping = false;
  void until.then(() => { stopping = true; });
  const results: LoadResult[] = [];
  let n = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    while (!stopping) {
      const started = performance.now();
      let status: number;
      try {
        status = await request(n++);
      } catch {
        status = 0; // no HTTP answer at all
      }
      results.push({ status, ms: performance.now() - started, at: performance.now() });
    }
  }));
  return results;
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

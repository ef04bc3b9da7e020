// Rate limits. A key's requests are counted in PostgreSQL, so that the limit holds for the deployment however many
// web processes share the database; while that store fails, each process counts in its own memory and says so once.
// Requests without a valid key are counted per client address in each process's memory: shared, a flood from a
// million addresses would be a million rows written.
import type { Knex } from 'knex';
import type { Next } from 'koa';
import { LRUCache } from 'lru-cache';
import ratelimit from 'koa-ratelimit';
import type { Logger } from '../../shared/logger.ts';
import { RateLimiterMemory, RateLimiterPostgres, RateLimiterRes } from 'rate-limiter-flexible';
import type { AppContext } from '../framework/context.ts';

interface LimitEntry {
  reset: number;
}

/**
 * koa-ratelimit's memory driver needs a Map it can share across requests, and it never deletes from it.
 * This one stays bounded: when full it drops expired windows first, then the oldest.
 */
export class BoundedLimitStore extends Map<string, LimitEntry> {
  readonly maxEntries: number;

  constructor(maxEntries = 100_000) {
    super();
    this.maxEntries = maxEntries;
  }

  override set(key: string, value: LimitEntry): this {
    if (this.maxEntries && !this.has(key) && this.size >= this.maxEntries) this.prune();
    return super.set(key, value);
  }

  private prune(): void {
    const nowSeconds = Date.now() / 1000;
    for (const [key, entry] of this) if (entry.reset < nowSeconds) this.delete(key);
    // Still full: everyone is inside a window. Drop the oldest tenth at once so pruning stays rare.
    const target = Math.floor(this.maxEntries * 0.9);
    for (const key of this.keys()) {
      if (this.size <= target) break;
      this.delete(key);
    }
  }
}

export interface RateLimitOptions {
  perKey: number;
  perIp: number;
  windowMs: number;
  store?: BoundedLimitStore;
  /** Where keys' requests are counted: `postgres` (shared by every process on the database) or `memory` (this process). */
  keyStore: 'postgres' | 'memory';
  db: Knex;
  logger: Logger;
}

/** A koa-ratelimit counter in `store`: `id` names what a request counts against. */
function counter(store: BoundedLimitStore, windowMs: number, max: number, id: (ctx: AppContext) => string) {
  const options = {
    driver: 'memory' as const,
    db: store,
    duration: windowMs,
    max,
    id,
    throw: false,
    // koa-ratelimit calls it (its types leave it out): the 429's body as JSON rather than its text.
    onLimited: (ctx: AppContext) => {
      ctx.body = { error: 'Rate limit exceeded' };
    },
  };
  return ratelimit(options);
}

/** A key's request counted: whether it may go on, what is left, and when the window ends. */
interface Verdict {
  allowed: boolean;
  remaining: number;
  msBeforeNext: number;
}

const verdict = (res: RateLimiterRes, allowed: boolean): Verdict => ({ allowed, remaining: Math.max(0, res.remainingPoints), msBeforeNext: res.msBeforeNext });

async function consume(limiter: RateLimiterMemory | RateLimiterPostgres, key: string): Promise<Verdict> {
  try {
    return verdict(await limiter.consume(key), true);
  } catch (rejection) {
    if (rejection instanceof RateLimiterRes) return verdict(rejection, false);
    throw rejection;
  }
}

/** How long the shared store may take before a request is counted in memory instead. */
const STORE_TIMEOUT_MS = 1000;

/**
 * How many of a key's requests one statement claims: 1 (every request counted in PostgreSQL, exactly) for limits
 * under 200 a window, up to 50 for large ones. A process serves a claim's requests from memory; at the end of a
 * window each process may leave up to a claim unused, so a key gets at most its limit, and at least its limit less
 * (claim - 1) per process: under 1% of it.
 */
export const claimSize = (perKey: number): number => Math.max(1, Math.min(50, Math.floor(perKey / 100)));

interface Claim {
  /** Requests this process may still serve from the claim. */
  left: number;
  /** What the key had left in PostgreSQL after the claim. */
  remaining: number;
  windowEnds: number;
}

/**
 * Keys' counters: upserts on the UNLOGGED `rate_limits` table (rate-limiter-flexible), a claim of claimSize requests
 * at a time; a key past its limit is refused from this process's memory until its window ends (no statement). A
 * failing or slow store makes the process count in memory, logged once, until a claim is counted in PostgreSQL
 * again, logged once too.
 */
export function keyCounter(options: Pick<RateLimitOptions, 'perKey' | 'windowMs' | 'keyStore' | 'db' | 'logger'>) {
  const duration = options.windowMs / 1000;
  const memory = new RateLimiterMemory({ points: options.perKey, duration, keyPrefix: 'key' });
  if (options.keyStore === 'memory') return (key: string) => consume(memory, key);
  const shared = new RateLimiterPostgres({
    storeClient: options.db, storeType: 'knex', tableName: 'rate_limits', tableCreated: true, keyPrefix: 'key',
    points: options.perKey, duration, inMemoryBlockOnConsumed: options.perKey,
  });
  const size = claimSize(options.perKey);
  const claims = new LRUCache<string, Claim>({ max: 10_000 });
  let inMemory = false;

  /** Claims `size` requests of the key; past the limit, what was left of it (a claim that crossed it), or none. */
  async function claim(key: string): Promise<Verdict> {
    let res: RateLimiterRes;
    try {
      res = await shared.consume(key, size);
    } catch (rejection) {
      if (!(rejection instanceof RateLimiterRes)) throw rejection;
      res = rejection;
    }
    // A key refused from memory (it reached its limit in this process) comes back with nothing consumed.
    const granted = res.consumedPoints === 0 ? 0 : Math.min(size, options.perKey - (res.consumedPoints - size));
    if (granted <= 0) return { allowed: false, remaining: 0, msBeforeNext: res.msBeforeNext };
    const remaining = Math.max(0, res.remainingPoints);
    claims.set(key, { left: granted - 1, remaining, windowEnds: Date.now() + res.msBeforeNext });
    return { allowed: true, remaining: remaining + granted - 1, msBeforeNext: res.msBeforeNext };
  }

  return async (key: string): Promise<Verdict> => {
    const held = claims.get(key);
    const now = Date.now();
    if (held && held.left > 0 && held.windowEnds > now) {
      held.left -= 1;
      return { allowed: true, remaining: held.remaining + held.left, msBeforeNext: held.windowEnds - now };
    }
    let timer: NodeJS.Timeout | undefined;
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`the rate limit store took over ${STORE_TIMEOUT_MS} ms`)), STORE_TIMEOUT_MS);
      });
      const counted = await Promise.race([claim(key), timeout]);
      if (inMemory) {
        inMemory = false;
        options.logger.info('rate limits: counting in PostgreSQL again, shared by every web process');
      }
      return counted;
    } catch (error) {
      if (!inMemory) {
        inMemory = true;
        options.logger.warn({ err: error }, 'rate limits: the counter store failed; counting keys in this process\'s memory until it is back');
      }
      return consume(memory, key);
    } finally {
      clearTimeout(timer);
    }
  };
}

/**
 * Authenticated requests count against their key; keyless requests and invalid keys count against the
 * client IP. Runs after the key is looked up and before it is enforced, so a keyless request past its
 * limit answers 429 rather than 400.
 */
export function rateLimit(options: RateLimitOptions) {
  const store = options.store ?? new BoundedLimitStore();
  const perKey = keyCounter(options);
  const perIp = counter(store, options.windowMs, options.perIp, (ctx) => `ip:${ctx.ip}`);

  return async function limit(ctx: AppContext, next: Next): Promise<void> {
    const auth = ctx.state.auth;
    if (!auth) {
      try {
        await perIp(ctx, next);
      } finally {
        normaliseHeaders(ctx);
      }
      return;
    }
    const counted = await perKey(auth.keyId);
    const reset = Math.ceil((Date.now() + counted.msBeforeNext) / 1000);
    ctx.set('X-RateLimit-Limit', String(options.perKey));
    ctx.set('X-RateLimit-Remaining', String(counted.remaining));
    ctx.set('X-RateLimit-Reset', String(reset));
    if (!counted.allowed) {
      ctx.status = 429;
      ctx.set('Retry-After', String(Math.max(1, Math.ceil(counted.msBeforeNext / 1000))));
      ctx.body = { error: 'Rate limit exceeded' };
      return;
    }
    await next();
  };
}

/** The routes that need no key (/health, the docs): a limit of their own per client IP, apart from the API's. */
export function publicRateLimit(options: { perIp: number; windowMs: number }) {
  const perIp = counter(new BoundedLimitStore(), options.windowMs, options.perIp, (ctx) => `public:${ctx.ip}`);
  return async function limitPublic(ctx: AppContext, next: Next): Promise<void> {
    try {
      await perIp(ctx, next);
    } finally {
      normaliseHeaders(ctx);
    }
  };
}

// koa-ratelimit reports the reset as fractional epoch seconds and can round Retry-After down to 0.
function normaliseHeaders(ctx: AppContext): void {
  const reset = Number(ctx.response.get('X-RateLimit-Reset'));
  if (!reset) return;
  ctx.set('X-RateLimit-Reset', String(Math.ceil(reset)));
  if (ctx.status === 429) ctx.set('Retry-After', String(Math.max(1, Math.ceil(reset - Date.now() / 1000))));
}

import type { Next } from 'koa';
import ratelimit from 'koa-ratelimit';
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
}

/** A koa-ratelimit counter in `store`: `id` names what a request counts against, or false when it does not count. */
function counter(store: BoundedLimitStore, windowMs: number, max: number, id: (ctx: AppContext) => string | false) {
  const options = {
    driver: 'memory' as const,
    db: store,
    duration: windowMs,
    max,
    id: (ctx: AppContext) => id(ctx),
    throw: false,
    // koa-ratelimit calls it (its types leave it out): the 429's body as JSON rather than its text.
    onLimited: (ctx: AppContext) => {
      ctx.body = { error: 'Rate limit exceeded' };
    },
  };
  return ratelimit(options);
}

/**
 * Authenticated requests count against their key; keyless requests and invalid keys count against the
 * client IP. Runs after the key is looked up and before it is enforced, so a keyless request past its
 * limit answers 429 rather than 400.
 */
export function rateLimit(options: RateLimitOptions) {
  const store = options.store ?? new BoundedLimitStore();
  const perKey = counter(store, options.windowMs, options.perKey, (ctx) => (ctx.state.auth ? `key:${ctx.state.auth.keyId}` : false));
  const perIp = counter(store, options.windowMs, options.perIp, (ctx) => (ctx.state.auth ? false : `ip:${ctx.ip}`));

  return async function limit(ctx: AppContext, next: Next): Promise<void> {
    const limiter = ctx.state.auth ? perKey : perIp;
    try {
      await limiter(ctx, next);
    } finally {
      normaliseHeaders(ctx);
    }
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

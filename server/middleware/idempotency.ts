// Idempotency-Key on POST, kept in PostgreSQL so that it holds across web processes.
//
// The first request with a key claims it (a `running` row); its answer is stored when it is a 2xx and replayed
// to every retry with the same method, path and body for 24 hours. A 4xx or 5xx means nothing was changed (the
// handler's transaction rolled back), so the claim is dropped and the key can be used again.
//
// A process that dies while it holds a claim leaves a `running` row behind. The claim is a lock that expires
// after LOCK_SECONDS, far past any request's run time: until then a retry is told to wait (409, Retry-After),
// after it the retry takes the key over and runs the request. If the process died in the moment between its
// commit and storing the answer, that second run applies the change again: the price of not holding a database
// connection per request for the sake of a crash in a window of a few milliseconds.
import { createHash, randomUUID } from 'node:crypto';
import type { Next } from 'koa';
import type { Db } from '../../db/knex.ts';
import { decryptSecret, encryptSecret } from '../../shared/webhook-secrets.ts';
import { ConflictError, ValidationError } from '../framework/errors.ts';
import type { AppContext } from '../framework/context.ts';

export const IDEMPOTENCY_HEADER = 'Idempotency-Key';
export const REPLAYED_HEADER = 'Idempotent-Replayed';
export const MAX_KEY_LENGTH = 255;
export const KEY_LIFETIME_HOURS = 24;
export const LOCK_SECONDS = 60;
// Headers that belong to the answer itself; rate-limit counters and the request id describe each request anew.
const KEPT_HEADERS = ['Location', 'Link', 'Retry-After'];

interface KeyRow {
  request_hash: string;
  state: 'running' | 'done';
  response_status: number | null;
  response_body: string | null;
  response_headers: Record<string, string> | null;
}

type Claim = { claimed: true; token: string } | { claimed: false; row: KeyRow };

function requestHash(ctx: AppContext): string {
  return createHash('sha256').update(`${ctx.method} ${ctx.path}\n`).update(ctx.request.rawBody ?? '').digest('hex');
}

/**
 * Claims the key, or returns the row that holds it. An expired row, or a running one whose lock expired for
 * the same request, is taken over in the same statement, so two processes never both believe they own a key.
 */
async function claim(db: Db, ctx: AppContext, accountId: string, key: string, hash: string): Promise<Claim> {
  // The row may go between the two statements (its request failed and released it): then claim again.
  for (let attempt = 0; attempt < 3; attempt++) {
    const token = randomUUID();
    const { rows } = await db.raw<{ rows: Array<{ lock_token: string }> }>(
      `insert into idempotency_keys as k (account_id, key, request_hash, state, lock_token, locked_until, expires_at)
       values (?::uuid, ?, ?, 'running', ?::uuid, now() + make_interval(secs => ?), now() + make_interval(hours => ?))
       on conflict (account_id, key) do update set
         request_hash = excluded.request_hash, state = 'running', lock_token = excluded.lock_token,
         locked_until = excluded.locked_until, expires_at = excluded.expires_at, response_status = null,
         response_body = null, response_headers = null, created_at = now(), updated_at = now()
       where k.expires_at <= now() or (k.state = 'running' and k.locked_until <= now() and k.request_hash = excluded.request_hash)
       returning lock_token`,
      [accountId, key, hash, token, LOCK_SECONDS, KEY_LIFETIME_HOURS],
    );
    if (rows[0]?.lock_token === token) return { claimed: true, token };
    const row: KeyRow | undefined = await db('idempotency_keys').where({ account_id: accountId, key })
      .first('request_hash', 'state', 'response_status', 'response_body', 'response_headers');
    if (row) return { claimed: false, row };
  }
  return stillRunning(ctx);
}

function stillRunning(ctx: AppContext): never {
  ctx.set('Retry-After', '1');
  throw new ConflictError('A request with this Idempotency-Key is still running; retry after it finishes');
}

function replay(ctx: AppContext, row: KeyRow, secretKey: Buffer): void {
  ctx.status = row.response_status!;
  for (const [name, value] of Object.entries(row.response_headers ?? {})) ctx.set(name, value);
  ctx.set(REPLAYED_HEADER, 'true');
  if (row.response_body !== null) {
    ctx.type = 'application/json';
    ctx.body = decryptSecret(secretKey, row.response_body);
  }
}

async function store(db: Db, ctx: AppContext, secretKey: Buffer, accountId: string, key: string, token: string): Promise<void> {
  const headers = Object.fromEntries(KEPT_HEADERS.flatMap((name) => (ctx.response.get(name) ? [[name, ctx.response.get(name)]] : [])));
  try {
    await db('idempotency_keys').where({ account_id: accountId, key, lock_token: token }).update({
      state: 'done',
      response_status: ctx.status,
      // Encrypted like webhook secrets, which the answer of POST /webhooks carries: a dump alone reveals none.
      response_body: ctx.body == null ? null : encryptSecret(secretKey, JSON.stringify(ctx.body)),
      response_headers: headers,
      updated_at: db.fn.now(),
    });
  } catch (error) {
    // The change is committed: answer it. The claim stays `running` until its lock expires (see the top).
    ctx.state.log.error({ err: error }, 'could not store the answer of an idempotent request');
  }
}

async function release(db: Db, ctx: AppContext, accountId: string, key: string, token: string): Promise<void> {
  try {
    await db('idempotency_keys').where({ account_id: accountId, key, lock_token: token }).delete();
  } catch (error) {
    // Nothing was changed; the key is free again once its lock expires.
    ctx.state.log.error({ err: error }, 'could not release an Idempotency-Key');
  }
}

/**
 * Runs after authentication and body parsing, for POST requests that carry an `Idempotency-Key`. Stored answers
 * are encrypted with WEBHOOK_SECRET_KEY, without which the web process does not start.
 */
export function idempotency(db: Db, secretKey: Buffer | undefined) {
  return async function idempotency(ctx: AppContext, next: Next): Promise<void> {
    const key = ctx.get(IDEMPOTENCY_HEADER);
    const auth = ctx.state.auth;
    if (ctx.method !== 'POST' || key === '' || !auth) return next();
    if (key.length > MAX_KEY_LENGTH) throw ValidationError.of(IDEMPOTENCY_HEADER, `must be at most ${MAX_KEY_LENGTH} characters`);

    if (!secretKey) throw new Error('WEBHOOK_SECRET_KEY is not configured');
    const hash = requestHash(ctx);
    const found = await claim(db, ctx, auth.accountId, key, hash);
    if (!found.claimed) {
      const { row } = found;
      if (row.request_hash !== hash) {
        throw new ConflictError('This Idempotency-Key was already used with another request (method, path or body); use a new key for a new request');
      }
      if (row.state === 'running') stillRunning(ctx);
      return replay(ctx, row, secretKey);
    }

    try {
      await next();
    } catch (error) {
      await release(db, ctx, auth.accountId, key, found.token);
      throw error;
    }
    if (ctx.status >= 200 && ctx.status < 300) await store(db, ctx, secretKey, auth.accountId, key, found.token);
    else await release(db, ctx, auth.accountId, key, found.token);
  };
}

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
//
// Answers are stored encrypted with ENCRYPTION_KEY. One stored under a key since replaced cannot be replayed: the
// Idempotency-Key then counts as unused (the request runs), and the log says so once.
import { createHash, randomUUID } from 'node:crypto';
import type { Next } from 'koa';
import type { Knex } from 'knex';
import { decrypt, DecryptionError, encrypt } from '../../shared/encryption.ts';
import { ConflictError, ValidationError } from '../../shared/errors.ts';
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
 * Claims the key, or returns the row that holds it. An expired row, a running one whose lock expired for the same
 * request, or one holding the `unreadable` answer for it, is taken over in the same statement, so two processes
 * never both believe they own a key.
 */
async function claim(db: Knex, ctx: AppContext, accountId: string, key: string, hash: string, unreadable: string | null = null): Promise<Claim> {
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
         or (k.response_body = ? and k.request_hash = excluded.request_hash)
       returning lock_token`,
      [accountId, key, hash, token, LOCK_SECONDS, KEY_LIFETIME_HOURS, unreadable],
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

let unreadableLogged = false;

/** The stored answer's body, or `undefined` when this ENCRYPTION_KEY cannot read it. */
function storedBody(ctx: AppContext, row: KeyRow, encryptionKey: Buffer): string | null | undefined {
  if (row.response_body === null) return null;
  try {
    return decrypt(encryptionKey, row.response_body);
  } catch (error) {
    if (!(error instanceof DecryptionError)) throw error;
    if (!unreadableLogged) {
      ctx.state.log.warn('an Idempotency-Key answer was stored under another ENCRYPTION_KEY: such keys count as unused and their requests run again');
      unreadableLogged = true;
    }
    return undefined;
  }
}

function replay(ctx: AppContext, row: KeyRow, body: string | null): void {
  ctx.status = row.response_status!;
  for (const [name, value] of Object.entries(row.response_headers ?? {})) ctx.set(name, value);
  ctx.set(REPLAYED_HEADER, 'true');
  if (body !== null) {
    ctx.type = 'application/json';
    ctx.body = body;
  }
}

async function store(db: Knex, ctx: AppContext, encryptionKey: Buffer, accountId: string, key: string, token: string): Promise<void> {
  const headers = Object.fromEntries(KEPT_HEADERS.flatMap((name) => (ctx.response.get(name) ? [[name, ctx.response.get(name)]] : [])));
  try {
    await db('idempotency_keys').where({ account_id: accountId, key, lock_token: token }).update({
      state: 'done',
      response_status: ctx.status,
      // Encrypted: answers hold what their accounts sent, and a dump of the database alone should reveal none of it.
      // A body with a secret in it comes with a replay body without (Reply.replay): the secret is never kept.
      response_body: ctx.body == null ? null : encrypt(encryptionKey, JSON.stringify(ctx.state.replayBody ?? ctx.body)),
      response_headers: headers,
      updated_at: db.fn.now(),
    });
  } catch (error) {
    // The change is committed: answer it. The claim stays `running` until its lock expires (see the top).
    ctx.state.log.error({ err: error }, 'could not store the answer of an idempotent request');
  }
}

async function release(db: Knex, ctx: AppContext, accountId: string, key: string, token: string): Promise<void> {
  try {
    await db('idempotency_keys').where({ account_id: accountId, key, lock_token: token }).delete();
  } catch (error) {
    // Nothing was changed; the key is free again once its lock expires.
    ctx.state.log.error({ err: error }, 'could not release an Idempotency-Key');
  }
}

/**
 * Runs after authentication and body parsing, for POST requests that carry an `Idempotency-Key`. Stored answers
 * are encrypted with ENCRYPTION_KEY, without which the web process does not start.
 */
export function idempotency(db: Knex, encryptionKey: Buffer | undefined) {
  return async function idempotency(ctx: AppContext, next: Next): Promise<void> {
    const key = ctx.get(IDEMPOTENCY_HEADER);
    const auth = ctx.state.auth;
    if (ctx.method !== 'POST' || key === '' || !auth) return next();
    if (key.length > MAX_KEY_LENGTH) throw ValidationError.of(IDEMPOTENCY_HEADER, `must be at most ${MAX_KEY_LENGTH} characters`);

    if (!encryptionKey) throw new Error('ENCRYPTION_KEY is not configured');
    const hash = requestHash(ctx);
    let found = await claim(db, ctx, auth.accountId, key, hash);
    if (!found.claimed) {
      const { row } = found;
      if (row.request_hash !== hash) {
        throw new ConflictError('This Idempotency-Key was already used with another request (method, path or body); use a new key for a new request');
      }
      if (row.state === 'running') stillRunning(ctx);
      const body = storedBody(ctx, row, encryptionKey);
      if (body !== undefined) return replay(ctx, row, body);
      found = await claim(db, ctx, auth.accountId, key, hash, row.response_body);
      if (!found.claimed) stillRunning(ctx);
    }

    try {
      await next();
    } catch (error) {
      await release(db, ctx, auth.accountId, key, found.token);
      throw error;
    }
    if (ctx.status >= 200 && ctx.status < 300) await store(db, ctx, encryptionKey, auth.accountId, key, found.token);
    else await release(db, ctx, auth.accountId, key, found.token);
  };
}

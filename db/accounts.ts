// Accounts, their users and API keys: used by the operator CLI, `npm start`'s demo account and the web's auth.
import { createHash, randomBytes } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { Knex } from 'knex';
import { isUuid } from '../shared/guards.ts';

const KEY_PREFIX = 'srk_';

export interface ApiKeyIdentity {
  keyId: string;
  accountId: string;
  userId: string;
}

export interface ApiKeySummary {
  id: string;
  accountId: string;
  userId: string;
  userEmail: string;
  label: string | null;
  prefix: string;
  createdAt: string;
  lastUsedAt: string | null;
  revokedAt: string | null;
}

export class AccountError extends Error {}

export function hashKey(key: string): string {
  return createHash('sha256').update(key).digest('hex');
}

/** 32 random bytes (256 bits), base64url: shown once, stored only as its SHA-256. */
function generateKey(): string {
  return KEY_PREFIX + randomBytes(32).toString('base64url');
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;
function normaliseEmail(email: string): string {
  const value = email.trim().toLowerCase();
  if (!EMAIL.test(value)) throw new AccountError(`"${email}" is not a valid email address`);
  return value;
}

const ORDER_NUMBER_SEQUENCE = 'sales_order_numbers_';

/** The sequence an account's generated sales order numbers come from (`SO-000042` from 42). */
export const orderNumberSequence = (accountId: string): string => `${ORDER_NUMBER_SEQUENCE}${accountId.replaceAll('-', '')}`;

/** orderNumberSequence in SQL, over a uuid expression: the sequence as a regclass, for nextval. */
export const orderNumberSequenceSql = (accountId: string): string => `('${ORDER_NUMBER_SEQUENCE}' || replace(${accountId}::text, '-', ''))::regclass`;

export async function createAccount(db: Knex, name: string, email: string): Promise<{ accountId: string; userId: string }> {
  if (!name.trim()) throw new AccountError('The account name must not be blank');
  const userEmail = normaliseEmail(email);
  return db.transaction(async (trx) => {
    const [account] = await trx('accounts').insert({ name: name.trim() }).returning('id');
    const [user] = await trx('users').insert({ account_id: account.id, email: userEmail }).returning('id');
    await trx.raw('create sequence ?? as bigint', [orderNumberSequence(account.id)]);
    return { accountId: account.id as string, userId: user.id as string };
  });
}

async function requireAccount(db: Knex, accountId: string): Promise<void> {
  const found = isUuid(accountId) && (await db('accounts').where({ id: accountId }).first('id'));
  if (!found) throw new AccountError(`No account with id "${accountId}"`);
}

/** Creates a key acting as the account's user with that email, creating the user when the account has none. */
export async function createApiKey(
  db: Knex,
  input: { accountId: string; email: string; label?: string },
): Promise<{ id: string; key: string; userId: string }> {
  const email = normaliseEmail(input.email);
  await requireAccount(db, input.accountId);
  const key = generateKey();
  return db.transaction(async (trx) => {
    await trx('users').insert({ account_id: input.accountId, email }).onConflict(['account_id', 'email']).ignore();
    const user = await trx('users').where({ account_id: input.accountId, email }).first('id');
    const [row] = await trx('api_keys')
      .insert({
        account_id: input.accountId,
        user_id: user.id,
        label: input.label ?? null,
        key_hash: hashKey(key),
        key_prefix: key.slice(0, KEY_PREFIX.length + 6),
      })
      .returning('id');
    return { id: row.id as string, key, userId: user.id as string };
  });
}

/** Where revocations are announced: every web process listening forgets the key at once (db/revocations.ts). */
export const REVOKED_CHANNEL = 'api_key_revoked';

export async function revokeApiKey(db: Knex, keyId: string): Promise<{ id: string; revokedAt: string }> {
  if (!isUuid(keyId)) throw new AccountError(`No API key with id "${keyId}"`);
  // Revoking twice keeps the first revocation time. The notification is delivered when the statement commits.
  const { rows: [row] } = await db.raw<{ rows: Array<{ id: string; revoked_at: string }> }>(
    `with r as (
       update api_keys set revoked_at = coalesce(revoked_at, now()), updated_at = now() where id = ? returning id, revoked_at
     )
     select r.id, r.revoked_at, pg_notify(?, r.id::text) from r`,
    [keyId, REVOKED_CHANNEL],
  );
  if (!row) throw new AccountError(`No API key with id "${keyId}"`);
  forgetKey(row.id);
  return { id: row.id, revokedAt: row.revoked_at };
}

export async function listApiKeys(db: Knex, accountId: string): Promise<ApiKeySummary[]> {
  await requireAccount(db, accountId);
  const rows = await db('api_keys as k')
    .join('users as u', 'u.id', 'k.user_id')
    .where('k.account_id', accountId)
    .orderBy([{ column: 'k.created_at' }, { column: 'k.id' }])
    .select('k.*', 'u.email as user_email');
  return rows.map((row) => ({
    id: row.id,
    accountId: row.account_id,
    userId: row.user_id,
    userEmail: row.user_email,
    label: row.label,
    prefix: row.key_prefix,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at,
    revokedAt: row.revoked_at,
  }));
}

const LAST_USED_RESOLUTION_MS = 60_000;

// A key found in the last second is trusted without asking the database again: that saves a statement on nearly
// every request. A revocation takes effect at once in the process that makes it (forgetKey), and in every web
// process that listens for revocations (db/revocations.ts), which trusts the cache only while it listens; in a
// process that does not listen (a test's app, the CLI), within KEY_CACHE_TTL_MS.
const KEY_CACHE_TTL_MS = 1000;
const keyCache = new LRUCache<string, ApiKeyIdentity>({ max: 10_000, ttl: KEY_CACHE_TTL_MS });

// A key found unknown (or revoked) is not looked up again for a few seconds: a client retrying a bad key, rate
// limited or not, costs no statement per request. Keys are 256 random bits made here, so no key that is missing
// now can be created meanwhile.
const UNKNOWN_KEY_TTL_MS = 10_000;
const unknownKeys = new LRUCache<string, true>({ max: 10_000, ttl: UNKNOWN_KEY_TTL_MS });

export function forgetKey(keyId: string): void {
  for (const [hash, identity] of keyCache.entries()) {
    if (identity.keyId === keyId) keyCache.delete(hash);
  }
}

let cacheTrusted = true;

/** Whether cached keys may be used: not while a listening process cannot hear revocations. Either way it starts empty. */
export function trustKeyCache(trusted: boolean): void {
  cacheTrusted = trusted;
  keyCache.clear();
}

/** The identity behind a key, or null when the key is unknown or revoked. */
export async function findApiKey(db: Knex, key: string): Promise<ApiKeyIdentity | null> {
  const hash = hashKey(key);
  const cached = cacheTrusted ? keyCache.get(hash) : undefined;
  if (cached) return cached;
  if (unknownKeys.has(hash)) return null;
  const row = await db('api_keys')
    .where({ key_hash: hash })
    .whereNull('revoked_at')
    .first('id', 'account_id', 'user_id', 'last_used_at');
  if (!row) {
    unknownKeys.set(hash, true);
    return null;
  }
  // Recorded at minute resolution so that a busy key does not write on every request.
  if (!row.last_used_at || Date.now() - Date.parse(row.last_used_at) > LAST_USED_RESOLUTION_MS) {
    await db('api_keys').where({ id: row.id }).update({ last_used_at: db.fn.now() });
  }
  const identity = { keyId: row.id, accountId: row.account_id, userId: row.user_id };
  keyCache.set(hash, identity);
  return identity;
}

export async function countAccounts(db: Knex): Promise<number> {
  const row = await db('accounts').count({ count: '*' }).first();
  return Number(row?.count ?? 0);
}

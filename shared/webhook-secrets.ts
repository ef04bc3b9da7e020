// Webhook signing secrets: made here, kept encrypted at rest (shared/encryption.ts), and used to sign deliveries
// the Standard Webhooks way, so that receivers verify with the `standardwebhooks` (or `svix`) package.
import { createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import { decrypt } from './encryption.ts';

const SECRET_PREFIX = 'whsec_';

/** `whsec_` + base64 of 32 random bytes, as Standard Webhooks describes. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

/** How many webhooks' signing keys a worker keeps decrypted. */
const SIGNING_KEYS_KEPT = 10_000;

/**
 * Signs deliveries with stored (encrypted) secrets. Each is decrypted once and kept as an HMAC key while it is in
 * use: decrypting, and handing node:crypto a Buffer rather than a KeyObject, cost a fifth of a worker's CPU.
 * The answer is the `webhook-signature` header: `v1,<base64 HMAC-SHA256 of "id.timestamp.body">` for each
 * secret, space-separated (during a rotation a receiver holding either secret verifies).
 */
export function createSigner(key: Buffer): (storedSecrets: string[], id: string, timestamp: number, body: string) => string {
  const signingKeys = new LRUCache<string, KeyObject>({ max: SIGNING_KEYS_KEPT });
  const signingKey = (stored: string): KeyObject => {
    let found = signingKeys.get(stored);
    if (!found) {
      const secret = decrypt(key, stored);
      found = createSecretKey(Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64'));
      signingKeys.set(stored, found);
    }
    return found;
  };
  return (storedSecrets, id, timestamp, body) => storedSecrets
    .map((stored) => `v1,${createHmac('sha256', signingKey(stored)).update(`${id}.${timestamp}.${body}`).digest('base64')}`)
    .join(' ');
}

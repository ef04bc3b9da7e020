// Webhook signing secrets: made here, kept encrypted at rest, and used to sign deliveries the Standard Webhooks
// way, so that receivers verify with the `standardwebhooks` (or `svix`) package.
import { createCipheriv, createDecipheriv, createHmac, createSecretKey, randomBytes, type KeyObject } from 'node:crypto';
import { LRUCache } from 'lru-cache';

const SECRET_PREFIX = 'whsec_';

/** `whsec_` + base64 of 32 random bytes, as Standard Webhooks describes. */
export function generateSecret(): string {
  return SECRET_PREFIX + randomBytes(32).toString('base64');
}

// AES-256-GCM under WEBHOOK_SECRET_KEY: `v1.<iv>.<tag>.<ciphertext>`, each base64.
export function encryptSecret(key: Buffer, secret: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), ciphertext.toString('base64')].join('.');
}

export function decryptSecret(key: Buffer, stored: string): string {
  const [version, iv, tag, ciphertext] = stored.split('.');
  if (version !== 'v1' || !iv || !tag || !ciphertext) throw new Error('Unreadable webhook secret');
  const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
  decipher.setAuthTag(Buffer.from(tag, 'base64'));
  try {
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new Error('Cannot decrypt a webhook secret: WEBHOOK_SECRET_KEY is not the key it was stored with');
  }
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
      const secret = decryptSecret(key, stored);
      found = createSecretKey(Buffer.from(secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : secret, 'base64'));
      signingKeys.set(stored, found);
    }
    return found;
  };
  return (storedSecrets, id, timestamp, body) => storedSecrets
    .map((stored) => `v1,${createHmac('sha256', signingKey(stored)).update(`${id}.${timestamp}.${body}`).digest('base64')}`)
    .join(' ');
}

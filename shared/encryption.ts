// What is kept secret at rest (webhook signing secrets, the stored answers of Idempotency-Keys) is encrypted
// with ENCRYPTION_KEY: a copy of the database alone reveals none of it.
import { createCipheriv, createDecipheriv, randomBytes } from 'node:crypto';

/** Stored text that this key cannot decrypt: it was stored under another ENCRYPTION_KEY, or damaged. */
export class DecryptionError extends Error {}

// AES-256-GCM: `v1.<iv>.<tag>.<ciphertext>`, each base64.
export function encrypt(key: Buffer, text: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv('aes-256-gcm', key, iv);
  const ciphertext = Buffer.concat([cipher.update(text, 'utf8'), cipher.final()]);
  return ['v1', iv.toString('base64'), cipher.getAuthTag().toString('base64'), ciphertext.toString('base64')].join('.');
}

export function decrypt(key: Buffer, stored: string): string {
  const [version, iv, tag, ciphertext] = stored.split('.');
  if (version !== 'v1' || !iv || !tag || !ciphertext) throw new DecryptionError('Unreadable encrypted value');
  try {
    const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(iv, 'base64'));
    decipher.setAuthTag(Buffer.from(tag, 'base64'));
    return Buffer.concat([decipher.update(Buffer.from(ciphertext, 'base64')), decipher.final()]).toString('utf8');
  } catch {
    throw new DecryptionError('Cannot decrypt a stored value: ENCRYPTION_KEY is not the key it was stored with');
  }
}

// Keys at rest: a database dump alone yields no usable key. Each key is stored as an HMAC-SHA256
// under the server secret (the lookup index) and encrypted with AES-256-GCM (so that getKeys can
// still email it). Both keys are derived from SECRET with HKDF, one per purpose.
import { createCipheriv, createDecipheriv, createHmac, hkdfSync, randomBytes } from 'node:crypto';

export type KeyVault = {
  /** The lookup index of a key value: hex HMAC-SHA256. */
  hash: (key: string) => string;
  encrypt: (key: string) => string;
  /** Throws when the value was sealed under another SECRET (or is damaged). */
  decrypt: (sealed: string) => string;
  /** `decrypt`, or undefined where it would throw: for what a page shows, which must not fail on one row. */
  tryDecrypt: (sealed: string) => string | undefined;
};

const derive = (secret: string, purpose: string) => Buffer.from(hkdfSync('sha256', secret, 'contact-form-service', purpose, 32));

export function createKeyVault(secret: string): KeyVault {
  const lookupKey = derive(secret, 'verification-key lookup');
  const encryptionKey = derive(secret, 'verification-key encryption');
  const decrypt = (sealed: string) => {
    const [version, iv, data, tag] = sealed.split(':');
    if (version !== 'v1' || !iv || !data || !tag) throw new Error('not a sealed key');
    const decipher = createDecipheriv('aes-256-gcm', encryptionKey, Buffer.from(iv, 'base64url'));
    decipher.setAuthTag(Buffer.from(tag, 'base64url'));
    return Buffer.concat([decipher.update(Buffer.from(data, 'base64url')), decipher.final()]).toString('utf8');
  };
  return {
    hash: (key) => createHmac('sha256', lookupKey).update(key).digest('hex'),
    encrypt(key) {
      const iv = randomBytes(12);
      const cipher = createCipheriv('aes-256-gcm', encryptionKey, iv);
      const sealed = Buffer.concat([cipher.update(key, 'utf8'), cipher.final()]);
      return ['v1', iv, sealed, cipher.getAuthTag()].map((part) => (typeof part === 'string' ? part : part.toString('base64url'))).join(':');
    },
    decrypt,
    tryDecrypt(sealed) {
      try {
        return decrypt(sealed);
      } catch {
        return undefined;
      }
    },
  };
}

/** A secret of its own for one purpose (hex), derived from SECRET: no further setting to keep. */
export const derivedSecret = (secret: string, purpose: string) => derive(secret, purpose).toString('hex');

/**
 * The form an erased address (or mailbox) is kept in (src/shared/visitors): `erased:` and the hex
 * HMAC-SHA256 of the lower-cased value under a key derived from SECRET. The suppression and
 * autoresponse-bound lookups still match it when the address comes back; the value cannot be read
 * from it, nor guessed without SECRET.
 */
export function createErasedForm(secret: string): (value: string) => string {
  const key = derive(secret, 'erased address');
  return (value) => `erased:${createHmac('sha256', key).update(value.trim().toLowerCase()).digest('hex')}`;
}

/** A new random server secret, for `npm start` when SECRET is unset. */
export const generateSecret = () => randomBytes(32).toString('base64url');

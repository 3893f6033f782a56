// A submission's key must be active, and a key restricted to domains must be used from one of them.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ActiveKey } from '../../shared/keys/keys.ts';
import { errors } from '../api-errors.ts';
import { keyAcceptsDomain } from './domains.ts';
import type { KeyCache } from './key-cache.ts';

/** `em`: the request's EntityManager, asked for only when the key is not cached. */
export async function authenticateKey(em: () => EntityManager, keys: KeyCache, accessKey: string, domain: string | undefined): Promise<ActiveKey> {
  const key = await keys.find(em, accessKey);
  if (!key) throw errors.invalidKey();
  if (!keyAcceptsDomain(key, domain)) throw errors.domainMismatch();
  return key;
}

/**
 * After an error, the key that may vouch for the request's `error_url`: the request's key when it
 * is active and accepts the domain; otherwise none, and the service's own error page is used.
 */
export async function vouchingKey(em: () => EntityManager, keys: KeyCache, accessKey: unknown, domain: string | undefined): Promise<ActiveKey | undefined> {
  if (typeof accessKey !== 'string' || !accessKey) return undefined;
  const key = await keys.find(em, accessKey);
  return key && keyAcceptsDomain(key, domain) ? key : undefined;
}

// A submission's key must be active, and a key restricted to domains must be used from one of them.
import type { EntityManager } from '@mikro-orm/postgresql';
import { findActiveKey, type ActiveKey } from '../../shared/keys.ts';
import type { KeyVault } from '../../shared/secrets.ts';
import { errors } from '../errors.ts';
import { keyAcceptsDomain } from './domains.ts';

export async function authenticateKey(
  em: EntityManager,
  vault: KeyVault,
  accessKey: string,
  domain: string | undefined,
): Promise<ActiveKey> {
  const key = await findActiveKey(em, vault, accessKey);
  if (!key) throw errors.invalidKey();
  if (!keyAcceptsDomain(key, domain)) throw errors.domainMismatch();
  return key;
}

/**
 * After an error, the key that may vouch for the request's `error_url`: the request's key when it
 * is active and accepts the domain; otherwise none, and the service's own error page is used.
 */
export async function vouchingKey(
  em: EntityManager,
  vault: KeyVault,
  accessKey: unknown,
  domain: string | undefined,
): Promise<ActiveKey | undefined> {
  if (typeof accessKey !== 'string' || !accessKey) return undefined;
  const key = await findActiveKey(em, vault, accessKey);
  return key && keyAcceptsDomain(key, domain) ? key : undefined;
}

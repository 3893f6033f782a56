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

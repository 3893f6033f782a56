// Reads of the verification_keys table for the HTTP adapters.
import type { EntityManager } from '@mikro-orm/postgresql';
import { VerificationKeySchema, type VerificationKey } from '../../db/entities.ts';

/** The key with this id whose address is `email`; null when there is none (not the owner's, or no such key). */
export async function findKeyOfOwner(em: EntityManager, email: string, keyId: string): Promise<VerificationKey | null> {
  return em.findOne(VerificationKeySchema, { id: keyId, email });
}

// Verification-key rules shared by the API and the operator CLI.
import type { EntityManager } from '@mikro-orm/postgresql';
import { VerificationKeySchema, type VerificationKey } from './db/entities.ts';

export const MAX_ACTIVE_KEYS = 10;

/** Addresses compare case-insensitively, so they are stored normalised. */
export const normaliseEmail = (email: string) => email.trim().toLowerCase();

/** The key that may authenticate a submission: known and active. */
export async function findActiveKey(em: EntityManager, key: string): Promise<VerificationKey | null> {
  return em.findOne(VerificationKeySchema, { key, status: 'active' });
}

// The owner_sign_ins table: console sign-in links, each sharing its id with the key_emails row
// that mails it.
import type { EntityManager } from '@mikro-orm/postgresql';
import { KeyEmailSchema } from '../../keys/entities.ts';
import { OwnerSignInSchema } from '../entities.ts';

/** Adds a sign-in link and the row of its email under the same id, in one flush. */
export async function insertSignIn(
  tx: EntityManager,
  link: { id: string; email: string; mailbox: string; tokenHash: string; tokenSealed: string; expiresAt: Date },
): Promise<void> {
  tx.create(KeyEmailSchema, { id: link.id, kind: 'sign-in', email: link.email, mailbox: link.mailbox });
  tx.create(OwnerSignInSchema, { id: link.id, email: link.email, tokenHash: link.tokenHash, tokenSealed: link.tokenSealed, expiresAt: link.expiresAt });
  await tx.flush();
}

/** The link with this id, unless it is used or expired. */
export const findLiveSignIn = (em: EntityManager, id: string) => em.findOne(OwnerSignInSchema, { id, expiresAt: { $gt: new Date() } });

/**
 * Deletes the live link whose token has this hash and returns the address it was for; undefined
 * when there is none (used, expired or forged). Deleting is what makes a link single-use.
 */
export async function deleteLiveSignIn(tx: EntityManager, tokenHash: string): Promise<string | undefined> {
  const [used] = await tx.execute<Array<{ email: string }>>('delete from owner_sign_ins where token_hash = ? and expires_at > now() returning email', [
    tokenHash,
  ]);
  return used?.email;
}

/** Housekeeping: deletes the expired links; returns how many. */
export async function deleteExpiredSignIns(em: EntityManager): Promise<number> {
  const links = await em.execute<Array<{ id: string }>>('delete from owner_sign_ins where expires_at <= now() returning id');
  return links.length;
}

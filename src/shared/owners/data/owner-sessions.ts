// The owner_sessions table: console sessions, found by their token's SHA-256.
import type { EntityManager } from '@mikro-orm/postgresql';
import { OwnerSessionSchema, type OwnerSession } from '../entities.ts';

export async function insertSession(tx: EntityManager, session: { id: string; tokenHash: string; email: string; expiresAt: Date }): Promise<OwnerSession> {
  const created = tx.create(OwnerSessionSchema, session);
  await tx.flush();
  return created;
}

/** The session whose token has this hash, unless it expired. */
export const findLiveSession = (em: EntityManager, tokenHash: string) => em.findOne(OwnerSessionSchema, { tokenHash, expiresAt: { $gt: new Date() } });

export async function deleteSession(em: EntityManager, sessionId: string): Promise<void> {
  await em.execute('delete from owner_sessions where id = ?', [sessionId]);
}

/** Housekeeping: deletes the expired sessions; returns how many. */
export async function deleteExpiredSessions(em: EntityManager): Promise<number> {
  const sessions = await em.execute<Array<{ id: string }>>('delete from owner_sessions where expires_at <= now() returning id');
  return sessions.length;
}

// The owner console's sign-in and sessions. A key is not a credential (it sits in the
// HTML of every page with the form), so owners prove who they are by the address that holds the
// keys: a single-use link, emailed like the key emails, opens a session for that address.
// Tokens are random 256-bit values; the database keeps only their SHA-256 (and, for a link not yet
// sent, a copy sealed under SECRET so the worker can write it into the email).
import { createHash, randomBytes, randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import { mailboxOf } from '../keys/consent.ts';
import type { OwnerSession } from './entities.ts';
import type { KeyVault } from '../infra/secrets.ts';
import { inTransaction } from '../infra/db/transactions.ts';
import { checkEmailCap, EmailCapError, lockMailbox, normaliseEmail, countKeysOfAddress } from '../keys/keys.ts';
import { deleteExpiredSignIns, deleteLiveSignIn, findLiveSignIn, insertSignIn } from './data/owner-sign-ins.ts';
import { deleteExpiredSessions, deleteSession, findLiveSession, insertSession } from './data/owner-sessions.ts';
import { forgetBounces, forgetComplaint } from '../bounces/bounces.ts';
import { countHeldOfAddress } from '../submissions/submissions.ts';

export const SIGN_IN_LINK_TTL_MINUTES = 15;
export const SESSION_TTL_DAYS = 7;
export const OWNER_LINK_PATH = '/owner/link';

const newToken = () => randomBytes(32).toString('base64url');
export const tokenHash = (token: string) => createHash('sha256').update(token).digest('hex');

/**
 * Records a sign-in email for an address that holds keys (in any state). Returns the key_emails
 * row to enqueue, or nothing: no keys, or the mailbox's hourly allowance of sign-in links is spent. The caller
 * answers the same in every case, so the answer tells nobody which addresses hold keys.
 */
export async function requestSignIn(em: EntityManager, vault: KeyVault, request: { email: string; emailsPerHour: number }): Promise<string | undefined> {
  const email = normaliseEmail(request.email);
  const mailbox = mailboxOf(email);
  try {
    return await inTransaction(em, async (tx) => {
      await lockMailbox(tx, mailbox);
      // Deleted keys count: their messages are still there for their owner to see.
      const held = await countKeysOfAddress(tx, email);
      if (held === 0) return undefined;
      await checkEmailCap(tx, mailbox, request.emailsPerHour, 'sign-in');
      const id = randomUUID(); // the email's row and the link's row share it
      const token = newToken();
      await insertSignIn(tx, {
        id,
        email,
        mailbox,
        tokenHash: tokenHash(token),
        tokenSealed: vault.encrypt(token),
        expiresAt: new Date(Date.now() + SIGN_IN_LINK_TTL_MINUTES * 60_000),
      });
      return id;
    });
  } catch (error) {
    if (error instanceof EmailCapError) return undefined;
    throw error;
  }
}

/** The link of a sign-in email (for the worker), or undefined when it is used or expired. */
export async function signInLink(em: EntityManager, vault: KeyVault, publicUrl: string, id: string): Promise<string | undefined> {
  const signIn = await findLiveSignIn(em, id);
  return signIn ? `${publicUrl}${OWNER_LINK_PATH}?${new URLSearchParams({ token: vault.decrypt(signIn.tokenSealed) }).toString()}` : undefined;
}

/**
 * Uses a link: deleting its row is what makes it single-use (two concurrent POSTs cannot both
 * delete it). Returns the new session and its cookie value, or undefined for a used, expired or
 * forged link.
 */
export async function consumeSignIn(em: EntityManager, token: string): Promise<{ session: OwnerSession; cookie: string } | undefined> {
  if (token.length === 0 || token.length > 100) return undefined;
  return inTransaction(em, async (tx) => {
    const email = await deleteLiveSignIn(tx, tokenHash(token));
    if (email === undefined) return undefined;
    // The sign-in email arrived, so the address takes mail again: its bounces and its mailbox's
    // complaint are forgiven.
    await forgetBounces(tx, email);
    await forgetComplaint(tx, mailboxOf(email));
    const cookie = newToken();
    const session = await insertSession(tx, {
      id: randomUUID(),
      tokenHash: tokenHash(cookie),
      email,
      expiresAt: new Date(Date.now() + SESSION_TTL_DAYS * 86_400_000),
    });
    return { session, cookie };
  });
}

/** The live session a cookie value names, if any. */
export async function findSession(em: EntityManager, cookie: string): Promise<OwnerSession | undefined> {
  if (cookie.length === 0 || cookie.length > 100) return undefined;
  return (await findLiveSession(em, tokenHash(cookie))) ?? undefined;
}

export const endSession = (em: EntityManager, sessionId: string): Promise<void> => deleteSession(em, sessionId);

/** Housekeeping: expired sessions and sign-in links go (called by the retention run). */
export async function deleteExpiredOwnerTokens(em: EntityManager): Promise<number> {
  const sessions = await deleteExpiredSessions(em);
  const links = await deleteExpiredSignIns(em);
  return sessions + links;
}

/** How many of the address's messages wait for its mailbox to confirm (recipient consent). */
export const heldCount = (em: EntityManager, email: string): Promise<number> => countHeldOfAddress(em, email);

// The owner console's tables: its single-use sign-in links and its sessions.
import { randomUUID } from 'node:crypto';
import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { createdAt } from '../infra/db/columns.ts';

/**
 * A sign-in link of the owner console (src/shared/owners/owners.ts): single use, short-lived. Its id is the
 * id of the key_emails row that carries it. The token is stored as its SHA-256 (how a link is
 * found) and sealed under SECRET (so the worker can put it in the email), like the keys.
 */
export const OwnerSignInSchema = defineEntity({
  name: 'OwnerSignIn',
  tableName: 'owner_sign_ins',
  properties: {
    id: p.uuid().primary(),
    email: p.string().length(254),
    tokenHash: p.string().length(64).unique(),
    tokenSealed: p.text(),
    expiresAt: p.datetime().index(),
    createdAt: createdAt(),
  },
});
export type OwnerSignIn = InferEntity<typeof OwnerSignInSchema>;

/** A signed-in owner: the cookie holds a random id, the table its SHA-256. */
export const OwnerSessionSchema = defineEntity({
  name: 'OwnerSession',
  tableName: 'owner_sessions',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    tokenHash: p.string().length(64).unique(),
    /** The address whose keys the session reaches (lower-cased, as keys store it). */
    email: p.string().length(254),
    expiresAt: p.datetime().index(),
    createdAt: createdAt(),
  },
});
export type OwnerSession = InferEntity<typeof OwnerSessionSchema>;

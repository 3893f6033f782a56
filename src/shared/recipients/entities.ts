// The added recipients feature's tables: the addresses an owner added to a key besides its own
// (each with its own consent), and the copy of each submission's email to each of them, a delivery
// row of its own (kind `recipient-copy`) with its status, attempts, return path and report.
import { randomUUID } from 'node:crypto';
import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { bounceColumns } from '../words/bounce-columns.ts';
import { createdAt } from '../infra/db/columns.ts';
import { VerificationKeySchema } from '../keys/entities.ts';
import { deliveryColumns } from '../deliveries/delivery-columns.ts';
import { SubmissionSchema } from '../submissions/entities.ts';

/**
 * An address added to a key. Its consent is its own and this key's only (`confirmed_at`): a
 * mailbox that confirmed for its own keys, or for another owner's, has not agreed to this owner's
 * messages. Removing it deletes the row; adding it again asks again.
 */
export const KeyRecipientSchema = defineEntity({
  name: 'KeyRecipient',
  tableName: 'key_recipients',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    key: () => p.manyToOne(VerificationKeySchema).deleteRule('cascade'),
    /** As the owner gave it, lower-cased: what is mailed to. */
    email: p.string().length(254),
    /** The inbox behind it (src/shared/keys/consent.ts mailboxOf): one per key, and what the bounds count by. */
    mailbox: p.string().length(254),
    /** When it confirmed, through the link of its confirmation request; null until then, and it receives nothing. */
    confirmedAt: p.datetime().nullable(),
    createdAt: createdAt(),
  },
  uniques: [{ properties: ['key', 'mailbox'], name: 'key_recipients_key_mailbox_unique' }],
});
export type KeyRecipient = InferEntity<typeof KeyRecipientSchema>;

/**
 * The copy of a submission's email to one added recipient. Made once per submission and mailbox by
 * the owner's email's worker, after the spam check let the message through: `queued` when the
 * recipient had confirmed, `held` until it does. Deleted with its submission.
 */
export const RecipientCopySchema = defineEntity({
  name: 'RecipientCopy',
  tableName: 'recipient_copies',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    submission: () => p.manyToOne(SubmissionSchema).deleteRule('cascade'),
    key: () => p.manyToOne(VerificationKeySchema).deleteRule('cascade'),
    /** The recipient it was made for; null once the owner removed that address (the copy says what became of it). */
    recipient: () => p.manyToOne(KeyRecipientSchema).nullable().deleteRule('set null').index(),
    /** The recipient's address when the copy was made: what is mailed to, and what a bounce counts against. */
    email: p.string().length(254),
    mailbox: p.string().length(254),
    ...deliveryColumns(),
    ...bounceColumns(),
    createdAt: createdAt(),
  },
  uniques: [{ properties: ['submission', 'mailbox'], name: 'recipient_copies_submission_mailbox_unique' }],
  indexes: [
    // The reconciler and retention (held copies past HELD_TTL_DAYS).
    { properties: ['emailStatus', 'createdAt'], name: 'recipient_copies_email_status_created_idx' },
  ],
});
export type RecipientCopy = InferEntity<typeof RecipientCopySchema>;

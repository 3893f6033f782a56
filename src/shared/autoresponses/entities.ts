// The autoresponse feature's table: each confirmation email sent (or queued) to a visitor, kept at
// least 24 hours after it was created, because it is also what the bounds count: one per visitor
// mailbox per key, and AUTORESPONSES_PER_MAILBOX per mailbox across keys, per 24 hours.
import { randomUUID } from 'node:crypto';
import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { bounceColumns } from '../words/bounce-columns.ts';
import { createdAt } from '../infra/db/columns.ts';
import { VerificationKeySchema } from '../keys/entities.ts';
import { deliveryColumns } from '../deliveries/delivery-columns.ts';
import { SubmissionSchema } from '../submissions/entities.ts';

export const AutoresponseSchema = defineEntity({
  name: 'Autoresponse',
  tableName: 'autoresponses',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    /** The submission it answers; null once that submission is deleted (the row still counts for the bounds). */
    submission: () => p.manyToOne(SubmissionSchema).nullable().deleteRule('set null').index(),
    key: () => p.manyToOne(VerificationKeySchema).deleteRule('cascade'),
    /** The visitor's address, as typed: what is mailed to, and what a bounce counts against. */
    email: p.string().length(254),
    /** The inbox behind it (src/shared/keys/consent.ts mailboxOf): what the bounds count by. */
    mailbox: p.string().length(254),
    ...deliveryColumns(),
    ...bounceColumns(),
    createdAt: createdAt(),
  },
  indexes: [
    // The bounds: the mailbox's autoresponses of the last 24 hours.
    { properties: ['mailbox', 'createdAt'], name: 'autoresponses_mailbox_created_idx' },
    // The key's and its owner's daily bounds.
    { properties: ['key', 'createdAt'], name: 'autoresponses_key_created_idx' },
    // The reconciler and retention.
    { properties: ['emailStatus', 'createdAt'], name: 'autoresponses_email_status_created_idx' },
  ],
});
export type Autoresponse = InferEntity<typeof AutoresponseSchema>;

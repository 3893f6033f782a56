// The delivery state of a row a worker sends (a submission's email, a key email, a webhook call):
// its statuses and columns. Imports nothing of a feature, so that every such table can use it.
import { p } from '@mikro-orm/core';

/**
 * `held`: a submission to an address that has not confirmed it wants this service's mail, past the
 * hourly allowance of such mail (src/shared/keys/consent.ts); it is delivered once the address confirms.
 * `bounced`, `complained`: the relay took the email, then a hard bounce or an abuse complaint came
 * back to its return path (src/bounces). `suppressed`: not attempted, the mailbox bounced too often.
 * `spam`: the spam filter held it back; kept, not emailed, until its owner says it is not spam.
 */
export const EMAIL_STATUSES = ['queued', 'sending', 'retrying', 'sent', 'failed', 'skipped', 'held', 'bounced', 'complained', 'suppressed', 'spam'] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

/** The delivery state of a row whose email a worker sends: submissions and key emails alike. */
export const deliveryColumns = () => ({
  emailStatus: p.enum(EMAIL_STATUSES).default('queued'),
  emailAttempts: p.integer().default(0),
  lastError: p.text().nullable(),
  /** When a worker claimed the row for sending; an old claim is a crashed worker's. */
  claimedAt: p.datetime().nullable(),
  sentAt: p.datetime().nullable(),
  messageId: p.string().length(998).nullable(),
  /** When the failed delivery was last re-sent: a fresh delivery, whose retry horizon counts from then. */
  requeuedAt: p.datetime().nullable(),
});

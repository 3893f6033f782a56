// The bounces feature's tables: hard bounces per address and complaints per mailbox, which suppress mail.
import { defineEntity, p } from '@mikro-orm/core';

/**
 * Hard bounces per address, exactly as it was mailed (lower-cased): only that spelling is
 * suppressed, so a stranger's key request for `owner+x@` that bounces stops no mail to `owner@`.
 * Apart from `recipients`: a change there tells every API process to forget its cached keys, and
 * bounces may come by the hundred a second.
 */
export const AddressBouncesSchema = defineEntity({
  name: 'AddressBounces',
  tableName: 'address_bounces',
  properties: {
    address: p.string().length(254).primary(),
    /** Hard bounces since the owner last signed in to the console: at SUPPRESS_AFTER_HARD_BOUNCES, suppression. */
    hardBounces: p.integer().default(0),
    lastBouncedAt: p.datetime().nullable(),
    /** Until then its submission emails are `suppressed`, not attempted. */
    suppressedUntil: p.datetime().nullable(),
  },
});

/**
 * Mailboxes that reported one of this service's emails as spam: suppressed until the owner signs
 * in. Per mailbox, not per address: only the inbox's own provider sends such a report.
 */
export const MailboxComplaintsSchema = defineEntity({
  name: 'MailboxComplaints',
  tableName: 'mailbox_complaints',
  properties: {
    mailbox: p.string().length(254).primary(),
    complainedAt: p.datetime(),
  },
});

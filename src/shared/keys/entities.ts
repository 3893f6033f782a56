// The keys feature's tables: the verification keys, the emails about them (new key, sign-in link,
// confirmation), and each mailbox's consent and its hourly allowance until it confirms.
import { EMAIL_FILES_MODES } from './email-layout.ts';
import { randomUUID } from 'node:crypto';
import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { bounceColumns } from '../words/bounce-columns.ts';
import { createdAt } from '../infra/db/columns.ts';
import { SPAM_FILTER_LEVELS } from '../words/spam-kinds.ts';
import { AUTORESPONSE_REVIEWS } from '../words/autoresponse-kinds.ts';
import { deliveryColumns } from '../deliveries/delivery-columns.ts';

export const KEY_STATUSES = ['active', 'disabled', 'deleted'] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

export const CAPTCHA_PROVIDERS = ['hcaptcha', 'turnstile', 'altcha'] as const;
export type CaptchaProvider = (typeof CAPTCHA_PROVIDERS)[number];

export const VerificationKeySchema = defineEntity({
  name: 'VerificationKey',
  tableName: 'verification_keys',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    /** HMAC-SHA256 of the key under SECRET: how a key is found (see src/shared/infra/secrets.ts). */
    keyHash: p.string().length(64).unique(),
    /** The key itself, AES-256-GCM under a key derived from SECRET, for emailing it again. */
    keyEncrypted: p.text(),
    /** Stored lower-cased: addresses compare case-insensitively. */
    email: p.string().length(254),
    /** The inbox behind the address (src/shared/keys/consent.ts mailboxOf): what consent and caps count by. */
    mailbox: p.string().length(254),
    status: p.enum(KEY_STATUSES).default('active'),
    useDomain: p.boolean().default(false),
    domains: p.json<string[]>().default('[]'),
    /** Captcha required on submissions with this key: none, hCaptcha, Cloudflare Turnstile or ALTCHA (issued and checked here). */
    captcha: p.enum(CAPTCHA_PROVIDERS).nullable(),
    /**
     * Since when the key's current captcha has been asked of its forms; null without one. Set by a
     * trigger on every change of `captcha`, whoever makes it, so that a submission taken before can
     * be told apart (the autoresponse needs one that passed a captcha).
     */
    captchaRequiredSince: p.datetime().nullable(),
    spamFilter: p.enum(SPAM_FILTER_LEVELS).default('normal'),
    /** Whether the key's webhooks also get the submissions marked spam (always with the verdict). */
    spamToWebhooks: p.boolean().default(false),
    /** The owner's name for the key ("Contact page, shop.example"); one line, at most KEY_LABEL_MAX characters. */
    label: p.string().length(100).nullable(),
    /** Whether the key's emails carry the label before their subject: "[label] subject". */
    subjectPrefix: p.boolean().default(false),
    /** The confirmation email to the visitor (src/shared/autoresponses): off by default; the owner's subject and plain text only. */
    autoresponseEnabled: p.boolean().default(false),
    autoresponseSubject: p.string().length(150).nullable(),
    autoresponseText: p.text().nullable(),
    /** The operator's review of the autoresponse (admin API): `approved` lifts the new key's bound, `blocked` stops it; reset to null when its text changes. */
    autoresponseReview: p.enum(AUTORESPONSE_REVIEWS).nullable(),
    /** The owner's email layout (src/shared/keys/email-layout.ts): a subject pattern, fields first or left out, files attached or linked. */
    emailSubject: p.string().length(200).nullable(),
    emailFieldOrder: p.json<string[]>().default('[]'),
    emailHiddenFields: p.json<string[]>().default('[]'),
    emailFiles: p.enum(EMAIL_FILES_MODES).default('attach'),
    /** Bytes of the files stored for this key's submissions, held under KEY_STORAGE_QUOTA_MB. */
    storedBytes: p.bigint('number').default(0),
    createdAt: createdAt(),
    updatedAt: p
      .datetime()
      .defaultRaw('now()')
      .onCreate(() => new Date())
      .onUpdate(() => new Date()),
  },
  // Serves the "active keys of this address" count and the per-address listings.
  indexes: [
    { properties: ['email', 'status'], name: 'verification_keys_email_status_idx' },
    { properties: ['mailbox'], name: 'verification_keys_mailbox_idx' },
  ],
});
export type VerificationKey = InferEntity<typeof VerificationKeySchema>;

/**
 * `confirm`: the one "confirm to receive more" email of an address whose submissions are held.
 * `sign-in`: the owner console's sign-in link (its token in owner_sign_ins, under the same id).
 * `webhook-disabled`: a webhook endpoint of the key was disabled after failing deliveries.
 * `recipient-confirm`: the request to an address the key's owner added, to confirm it wants copies
 * of the key's messages (src/shared/recipients); `email` is that address.
 * `autoresponse-test`: the key's autoresponse, as a visitor would receive it, sent to its owner from
 * the settings page and marked as a test (src/api/owners/send-autoresponse-test.ts).
 */
export const KEY_EMAIL_KINDS = ['new-key', 'all-keys', 'confirm', 'sign-in', 'webhook-disabled', 'recipient-confirm', 'autoresponse-test'] as const;
export type KeyEmailKind = (typeof KEY_EMAIL_KINDS)[number];

/**
 * An email of POST /: a new key to its owner, or all active keys of an address. Kept as a row
 * so that it is delivered like a submission, through the queue, with retries and a status.
 */
export const KeyEmailSchema = defineEntity({
  name: 'KeyEmail',
  tableName: 'key_emails',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    kind: p.enum(KEY_EMAIL_KINDS),
    email: p.string().length(254),
    mailbox: p.string().length(254),
    /** The new key, for `new-key`; `all-keys` lists the address's active keys at sending time. */
    key: () => p.manyToOne(VerificationKeySchema).nullable().deleteRule('cascade'),
    ...deliveryColumns(),
    ...bounceColumns(),
    createdAt: createdAt(),
  },
  indexes: [
    { properties: ['emailStatus', 'createdAt'], name: 'key_emails_email_status_created_idx' },
    // Serves the per-address cap on emails sent by POST / (mail bombing).
    { properties: ['email', 'createdAt'], name: 'key_emails_email_created_idx' },
    // Serves the same cap counted per mailbox (victim+1@, Victim@ … count together).
    { properties: ['mailbox', 'createdAt'], name: 'key_emails_mailbox_created_idx' },
  ],
});
export type KeyEmail = InferEntity<typeof KeyEmailSchema>;

/**
 * Recipient consent, per mailbox: whether the inbox confirmed it wants this service's mail, and
 * whether the one "confirm to receive more" email went out. Confirmation lasts.
 */
export const RecipientSchema = defineEntity({
  name: 'Recipient',
  tableName: 'recipients',
  properties: {
    mailbox: p.string().length(254).primary(),
    confirmedAt: p.datetime().nullable(),
    confirmRequestedAt: p.datetime().nullable(),
    createdAt: createdAt(),
  },
});
export type Recipient = InferEntity<typeof RecipientSchema>;

/** Submission emails to an unconfirmed mailbox in one clock hour: the consent allowance's counter. */
export const MailboxAllowanceSchema = defineEntity({
  name: 'MailboxAllowance',
  tableName: 'mailbox_allowances',
  properties: {
    mailbox: p.string().length(254).primary(),
    windowStart: p.datetime().primary(),
    used: p.integer(),
  },
});

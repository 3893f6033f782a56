// The data model. PostgreSQL is the source of truth: a job in Redis carries only a row's id.
// One file though past 250 lines: the entities refer to one another, and the whole schema (what
// `npm run migration:create` compares the migrations with) reads in one place.
import { randomUUID } from 'node:crypto';
import { defineEntity, p, type InferEntity } from '@mikro-orm/core';

export const KEY_STATUSES = ['active', 'disabled', 'deleted'] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

export const CAPTCHA_PROVIDERS = ['hcaptcha', 'turnstile', 'altcha'] as const;
export type CaptchaProvider = (typeof CAPTCHA_PROVIDERS)[number];

/** How a key's submissions are checked for spam: not at all, or marked spam from a lower score when strict (src/workers/spam/spam-check.ts). */
export const SPAM_FILTER_LEVELS = ['off', 'normal', 'strict'] as const;
export type SpamFilterLevel = (typeof SPAM_FILTER_LEVELS)[number];

/** The spam filter's verdict on a submission; `unchecked`: the filter was down or slow, and the email went out. */
export const SPAM_VERDICTS = ['ham', 'spam', 'unchecked'] as const;
export type SpamVerdict = (typeof SPAM_VERDICTS)[number];

/** The owner's mark on a submission, taught to the filter. */
export const SPAM_MARKS = ['ham', 'spam'] as const;
export type SpamMark = (typeof SPAM_MARKS)[number];

/**
 * `held`: a submission to an address that has not confirmed it wants this service's mail, past the
 * hourly allowance of such mail (src/shared/keys/consent.ts); it is delivered once the address confirms.
 * `bounced`, `complained`: the relay took the email, then a hard bounce or an abuse complaint came
 * back to its return path (src/bounces). `suppressed`: not attempted, the mailbox bounced too often.
 * `spam`: the spam filter held it back; kept, not emailed, until its owner says it is not spam.
 */
export const EMAIL_STATUSES = ['queued', 'sending', 'retrying', 'sent', 'failed', 'skipped', 'held', 'bounced', 'complained', 'suppressed', 'spam'] as const;
export type EmailStatus = (typeof EMAIL_STATUSES)[number];

/** What came back for an email: a hard or soft bounce, a delay notice, or an abuse complaint. */
export const BOUNCE_TYPES = ['hard', 'soft', 'delayed', 'complaint'] as const;
export type BounceType = (typeof BOUNCE_TYPES)[number];

/** One reason of a spam verdict: the filter's rule, its share of the score, and what it means. */
export type SpamReason = { symbol: string; score: number; description?: string };

/** Custom fields keep their arrival order and repeated names: a list of [name, value] pairs. */
export type CustomFields = Array<[name: string, value: string]>;

const createdAt = () =>
  p
    .datetime()
    .defaultRaw('now()')
    .onCreate(() => new Date());

/** The delivery state of a row whose email a worker sends: submissions and key emails alike. */
const deliveryColumns = () => ({
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

/** The last report that came back for a row's email (the most severe one: a delay never hides a bounce). */
const bounceColumns = () => ({
  bounceType: p.enum(BOUNCE_TYPES).nullable(),
  /** The enhanced status code, e.g. 5.1.1. */
  bounceStatus: p.string().length(16).nullable(),
  bounceDiagnostic: p.text().nullable(),
  /** The MTA that reported it (Reporting-MTA). */
  bounceMta: p.string().length(255).nullable(),
  bouncedAt: p.datetime().nullable(),
});

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
    spamFilter: p.enum(SPAM_FILTER_LEVELS).default('normal'),
    /** Whether the key's webhooks also get the submissions marked spam (always with the verdict). */
    spamToWebhooks: p.boolean().default(false),
    /** The owner's name for the key ("Contact page, shop.example"); one line, at most KEY_LABEL_MAX characters. */
    label: p.string().length(100).nullable(),
    /** Whether the key's emails carry the label before their subject: "[label] subject". */
    subjectPrefix: p.boolean().default(false),
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

export const SubmissionSchema = defineEntity({
  name: 'Submission',
  tableName: 'submissions',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    key: () => p.manyToOne(VerificationKeySchema).deleteRule('restrict'),
    email: p.string().length(254),
    message: p.text(),
    subject: p.string().length(998),
    customFields: p.json<CustomFields>().default('[]'),
    ...deliveryColumns(),
    /**
     * email_status is one of SETTLED (src/shared/submissions/delivery-statuses.ts), derived by PostgreSQL. The status lookups use it, not
     * an index on email_status, so that a claim (queued → sending) is a HOT update.
     */
    settled: p.boolean().generated("(email_status in ('sent', 'failed', 'skipped', 'bounced', 'complained', 'suppressed', 'spam')) stored").nullable(),
    ...bounceColumns(),
    spamVerdict: p.enum(SPAM_VERDICTS).nullable(),
    spamScore: p.float().nullable(),
    /** The filter's main reasons, strongest first: [{ symbol, score, description }]. */
    spamReasons: p.json<SpamReason[]>().nullable(),
    spamCheckedAt: p.datetime().nullable(),
    spamMark: p.enum(SPAM_MARKS).nullable(),
    spamMarkedAt: p.datetime().nullable(),
    /** When the mark was taught to the filter; null until then (the key's hourly teaching allowance was spent, or the filter was down). Its place in the allowance is in `spam_teachings`. */
    spamTaughtAt: p.datetime().nullable(),
    /** The place is reserved (spam_taught_at) and the filter has not answered yet; a stale one is taught again. */
    spamTeachPending: p.boolean().default(false),
    clientIp: p.string().length(64).nullable(),
    origin: p.string().length(2048).nullable(),
    /**
     * While `retrying`: when its job's retry timer ends (written with the failure that set it, and by
     * a flush that brings it forward). Left as it was once the row moves on: read it only while `retrying`.
     */
    nextAttemptAt: p.datetime().nullable(),
    /** The words the owner console's search finds, over a bounded prefix of the texts; written by a trigger (src/shared/infra/db/search.ts), never read into the entity. */
    searchDocument: p.string().columnType('tsvector').nullable().lazy(),
    /** The fields with each value cut for a list, and whether any was cut; written by a trigger (migration list_previews), null on older rows. */
    fieldsPreview: p.json<CustomFields>().nullable().lazy(),
    fieldsTruncated: p.boolean().nullable().lazy(),
    createdAt: createdAt(),
    attachments: () => p.oneToMany(AttachmentSchema).mappedBy('submission'),
  },
  indexes: [
    // The open rows (queued, sending, retrying, held): the reconciler, the held-submission rules.
    { properties: ['createdAt', 'id'], name: 'submissions_open_created_idx', where: 'not "settled"' },
    // The settled rows: retention.
    { properties: ['createdAt'], name: 'submissions_settled_created_idx', where: '"settled"' },
    { properties: ['key', 'createdAt'], name: 'submissions_key_created_idx' },
    // The marks not taught yet, taught later within the allowance (src/shared/spam/spam-teaching.ts).
    { properties: ['key', 'spamMarkedAt'], name: 'submissions_untaught_marks_idx', where: '"spam_mark" is not null and "spam_taught_at" is null' },
    // The reservations the filter has not answered yet: a stale one is put back (src/shared/spam/spam-teaching.ts).
    { properties: ['spamTaughtAt'], name: 'submissions_teach_pending_idx', where: '"spam_teach_pending"' },
    // The owner console's full-text search, the key first: a search reads only its key's entries (src/shared/infra/db/search.ts).
    { name: 'submissions_key_search_idx', expression: `create index "submissions_key_search_idx" on "submissions" using gin ("key_id", "search_document")` },
  ],
});
export type Submission = InferEntity<typeof SubmissionSchema>;

export const AttachmentSchema = defineEntity({
  name: 'Attachment',
  tableName: 'attachments',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    submission: () => p.manyToOne(SubmissionSchema).deleteRule('cascade').index(),
    fieldName: p.string().length(200),
    filename: p.string().length(255),
    contentType: p.string().length(255),
    size: p.bigint('number'),
    storageKey: p.string().length(1024),
    sha256: p.string().length(64),
    createdAt: createdAt(),
  },
});
export type Attachment = InferEntity<typeof AttachmentSchema>;

/** What an attempt to send a submission's email came to: accepted, refused for now, or refused for good. */
export const ATTEMPT_OUTCOMES = ['sent', 'retrying', 'failed'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/**
 * One attempt to send a submission's email: the delivery history, which a re-send adds to and never
 * erases. Written by the statement that records the attempt's outcome on the submission
 * (src/shared/submissions/data/delivery-rows.ts), and deleted with its submission.
 */
export const DeliveryAttemptSchema = defineEntity({
  name: 'DeliveryAttempt',
  tableName: 'delivery_attempts',
  properties: {
    id: p.bigint('number').primary().autoincrement(),
    submission: () => p.manyToOne(SubmissionSchema).deleteRule('cascade'),
    /** The attempt's number within its delivery: from 1 again after a re-send (email_attempts then). */
    attempt: p.integer(),
    /** When its outcome was recorded. */
    attemptedAt: p.datetime().defaultRaw('now()'),
    outcome: p.enum(ATTEMPT_OUTCOMES),
    /** The SMTP server's reply (250 … when accepted), or the error when there was none. */
    response: p.text().nullable(),
    /** The worker process that made it: host name and process id. */
    worker: p.string().length(255),
  },
  // A submission's history, newest first; also what the delete of a submission cascades through.
  indexes: [{ properties: ['submission', 'id'], name: 'delivery_attempts_submission_idx' }],
});
export type DeliveryAttempt = InferEntity<typeof DeliveryAttemptSchema>;

/**
 * `confirm`: the one "confirm to receive more" email of an address whose submissions are held.
 * `sign-in`: the owner console's sign-in link (its token in owner_sign_ins, under the same id).
 * `webhook-disabled`: a webhook endpoint of the key was disabled after failing deliveries.
 */
export const KEY_EMAIL_KINDS = ['new-key', 'all-keys', 'confirm', 'sign-in', 'webhook-disabled'] as const;
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

/**
 * The marks taught to the spam filter for each owner (mailbox), counted up only: a check reads the
 * owner's own statistics once both counts reach OWNER_MIN_LEARNS (../../spam/spam-filter.ts).
 */
export const OwnerSpamMarksSchema = defineEntity({
  name: 'OwnerSpamMarks',
  tableName: 'owner_spam_marks',
  properties: {
    mailbox: p.string().length(254).primary(),
    spam: p.integer().default(0),
    ham: p.integer().default(0),
  },
});

/**
 * Each time the filter was asked to learn a key's mark (or a place was reserved for it): the key's
 * hourly teaching allowance counts these, not the marks, so that reversing a taught mark, or
 * deleting its message, gives no place back. Only a teaching that failed gives its place back.
 */
export const SpamTeachingSchema = defineEntity({
  name: 'SpamTeaching',
  tableName: 'spam_teachings',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    key: () => p.manyToOne(VerificationKeySchema).deleteRule('cascade'),
    /** Null once the message is deleted: its teaching still counts. */
    submission: () => p.manyToOne(SubmissionSchema).nullable().deleteRule('set null').index(),
    mark: p.enum(SPAM_MARKS),
    taughtAt: p.datetime().defaultRaw('now()'),
  },
  indexes: [{ properties: ['key', 'taughtAt'], name: 'spam_teachings_key_taught_idx' }],
});

/**
 * An owner's mark as a vote on spam campaigns (src/shared/spam/spam-campaigns.ts): the fingerprint of the
 * marked message and the owner's mailbox, one row per marked submission, kept CAMPAIGN_VOTE_DAYS.
 * Not tied to the submission: deleting the message leaves the owner's word on its text standing.
 */
export const SpamCampaignVoteSchema = defineEntity({
  name: 'SpamCampaignVote',
  tableName: 'spam_campaign_votes',
  properties: {
    submissionId: p.uuid().primary(),
    mailbox: p.string().length(254),
    /** The mailbox's registrable domain (src/shared/spam/spam-campaigns.ts voteDomainOf): a campaign needs votes from several. */
    domain: p.string().length(254),
    mark: p.enum(SPAM_MARKS),
    /** The message's MinHash values, by position (src/shared/spam/campaign-fingerprint.ts). */
    hashes: p.array<number>().columnType('int4[]'),
    /** Its bands: what the index finds near-identical messages by. */
    bands: p.array<number>().columnType('int4[]'),
    markedAt: p.datetime().defaultRaw('now()'),
  },
  indexes: [
    // GIN, made without a pending list (fastupdate = off, in the migration): one query per email reads it.
    { properties: ['bands'], name: 'spam_campaign_votes_bands_idx', type: 'gin' },
    // Retention deletes the votes past their days.
    { properties: ['markedAt'], name: 'spam_campaign_votes_marked_idx' },
  ],
});

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

/**
 * A webhook endpoint of a key (src/shared/webhooks/webhooks.ts): where each accepted submission is POSTed,
 * signed with the endpoint's secret (sealed under SECRET like the keys, shown to the owner once).
 */
export const WebhookEndpointSchema = defineEntity({
  name: 'WebhookEndpoint',
  tableName: 'webhook_endpoints',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    key: () => p.manyToOne(VerificationKeySchema).deleteRule('cascade').index(),
    url: p.string().length(2048),
    secretSealed: p.text(),
    enabled: p.boolean().default(true),
    /** Deliveries that ended `failed` since the last one delivered: past WEBHOOK_DISABLE_AFTER the endpoint is disabled. */
    consecutiveFailures: p.integer().default(0),
    disabledAt: p.datetime().nullable(),
    createdAt: createdAt(),
  },
});
export type WebhookEndpoint = InferEntity<typeof WebhookEndpointSchema>;

/** What a webhook delivery tells its endpoint. */
export const WEBHOOK_EVENTS = ['submission.created', 'submission.bounced'] as const;
export type WebhookEvent = (typeof WEBHOOK_EVENTS)[number];

/** One event of a submission to one endpoint: delivered like an email, with the same delivery columns. */
export const WebhookDeliverySchema = defineEntity({
  name: 'WebhookDelivery',
  tableName: 'webhook_deliveries',
  properties: {
    id: p
      .uuid()
      .primary()
      .onCreate(() => randomUUID()),
    endpoint: () => p.manyToOne(WebhookEndpointSchema).deleteRule('cascade').index(),
    submission: () => p.manyToOne(SubmissionSchema).deleteRule('cascade').index(),
    event: p.enum(WEBHOOK_EVENTS).default('submission.created'),
    ...deliveryColumns(),
    /** The HTTP status of the last answer, null when there was none (refused, timeout, network). */
    lastResponseCode: p.integer().nullable(),
    createdAt: createdAt(),
  },
  indexes: [{ properties: ['emailStatus', 'createdAt'], name: 'webhook_deliveries_status_created_idx' }],
});
export type WebhookDelivery = InferEntity<typeof WebhookDeliverySchema>;

/**
 * The one row (id 1) that tells whether this process has the SECRET the data was written with: a
 * known text sealed under it by the first process that started (src/shared/infra/secret-check.ts).
 */
export const SecretCheckSchema = defineEntity({
  name: 'SecretCheck',
  tableName: 'secret_check',
  properties: {
    id: p.integer().primary().autoincrement(false),
    sealed: p.text(),
    writtenAt: p.datetime().defaultRaw('now()'),
  },
});

export const entities = [
  VerificationKeySchema,
  SubmissionSchema,
  AttachmentSchema,
  DeliveryAttemptSchema,
  KeyEmailSchema,
  RecipientSchema,
  MailboxAllowanceSchema,
  AddressBouncesSchema,
  MailboxComplaintsSchema,
  OwnerSpamMarksSchema,
  SpamTeachingSchema,
  SpamCampaignVoteSchema,
  OwnerSignInSchema,
  OwnerSessionSchema,
  WebhookEndpointSchema,
  WebhookDeliverySchema,
  SecretCheckSchema,
];

// The submissions feature's tables: each accepted submission, its files and its delivery history.
import { randomUUID } from 'node:crypto';
import { defineEntity, p, type InferEntity } from '@mikro-orm/core';
import { bounceColumns } from '../words/bounce-columns.ts';
import { createdAt } from '../infra/db/columns.ts';
import { VerificationKeySchema } from '../keys/entities.ts';
import { AUTORESPONSE_OUTCOMES } from '../words/autoresponse-kinds.ts';
import { SPAM_MARKS, SPAM_VERDICTS, type SpamReason } from '../words/spam-kinds.ts';
import { FILE_SCAN_OUTCOMES } from '../words/file-scan-outcomes.ts';
import { deliveryColumns } from '../deliveries/delivery-columns.ts';
import type { CustomFields } from '../words/custom-fields.ts';

export type { CustomFields } from '../words/custom-fields.ts';

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
     * email_status is one of SETTLED (src/shared/deliveries/delivery-statuses.ts), derived by PostgreSQL. The status lookups use it, not
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
    /**
     * A test message the owner sent from the console (src/api/owners/test-message.ts): delivered like any
     * other, marked as a test in every email, chat post and webhook, and counted in no bound or figure.
     */
    test: p.boolean().default(false),
    /** What became of the confirmation email to the visitor (src/shared/autoresponses); null until the owner's email is decided. */
    autoresponse: p.enum(AUTORESPONSE_OUTCOMES).nullable(),
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
    // The submissions sent without an autoresponse outcome: the reconciler makes their copies and autoresponse (src/workers/housekeeping/unfinished-fan-outs.ts).
    {
      properties: ['createdAt', 'id'],
      name: 'submissions_unfinished_fan_out_idx',
      where: '"settled" and "autoresponse" is null and "sent_at" is not null',
    },
    { properties: ['key', 'createdAt'], name: 'submissions_key_created_idx' },
    // The marks not taught yet, taught later within the allowance (src/shared/spam/spam-teaching.ts).
    { properties: ['key', 'spamMarkedAt'], name: 'submissions_untaught_marks_idx', where: '"spam_mark" is not null and "spam_taught_at" is null' },
    // The reservations the filter has not answered yet: a stale one is put back (src/shared/spam/spam-teaching.ts).
    { properties: ['spamTaughtAt'], name: 'submissions_teach_pending_idx', where: '"spam_teach_pending"' },
    // A key's test messages of the last hour: their bound (src/api/owners/test-message.ts).
    { properties: ['key', 'createdAt'], name: 'submissions_key_test_idx', where: '"test"' },
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
    /** The virus scan's outcome (src/shared/files); null before the scan, or with scanning off. */
    scanOutcome: p.enum(FILE_SCAN_OUTCOMES).nullable(),
    /** An infected file's signature, or why a file is unscanned or too large to scan. */
    scanDetail: p.string().length(500).nullable(),
    scannedAt: p.datetime().nullable(),
    /** A quarantined file's object is deleted from storage after this (QUARANTINE_DAYS). */
    purgeAt: p.datetime().nullable(),
  },
  indexes: [{ properties: ['purgeAt'], name: 'attachments_purge_at_idx', where: '"purge_at" is not null' }],
});
export type Attachment = InferEntity<typeof AttachmentSchema>;

/** What an attempt to send a submission's email came to: accepted, refused for now, or refused for good. */
export const ATTEMPT_OUTCOMES = ['sent', 'retrying', 'failed'] as const;
export type AttemptOutcome = (typeof ATTEMPT_OUTCOMES)[number];

/**
 * One attempt to send a submission's email: the delivery history, which a re-send adds to and never
 * erases. Written by the statement that records the attempt's outcome on the submission
 * (src/shared/deliveries/data/delivery-rows.ts), and deleted with its submission.
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
 * A client's Idempotency-Key on a submission (a JSON client's safe retry): the submission it made
 * and the fingerprint of the request that made it. Written in the transaction that stores the
 * submission, so a key names a stored submission or nothing; kept IDEMPOTENCY_KEPT_HOURS.
 */
export const IdempotencyKeySchema = defineEntity({
  name: 'IdempotencyKey',
  tableName: 'idempotency_keys',
  properties: {
    key: () => p.manyToOne(VerificationKeySchema).primary().deleteRule('cascade'),
    /** The header's value, as the client sent it. */
    idempotencyKey: p.string().length(255).primary(),
    /** SHA-256 of the request's fields and files, base64url: a retry must match it. */
    fingerprint: p.string().length(43),
    submission: () => p.manyToOne(SubmissionSchema).deleteRule('cascade').index(),
    createdAt: createdAt(),
  },
  indexes: [{ properties: ['createdAt'], name: 'idempotency_keys_created_idx' }],
});
export type IdempotencyKey = InferEntity<typeof IdempotencyKeySchema>;

// The claim of a delivery row, for every kind (../delivery-kinds.ts): one compare-and-set moves it
// to `sending` for one worker, and the claim token names that worker when it records the outcome
// (./outcomes.ts); the submissions' claim loads what their emails need in the same statement. A
// claim given back untouched is here too. Guards and statuses: ./status-sql.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { StatementRunner } from '../../infra/db/pg-pool.ts';
import type { CustomFields } from '../../words/custom-fields.ts';
import type { SpamFilterLevel, SpamMark, SpamVerdict } from '../../words/spam-kinds.ts';
import { FAILED } from '../delivery-statuses.ts';
import type { KindFor } from '../delivery-transitions.ts';
import { andStatus, claimTokenOf, OWN_CLAIM, statusAfter, tableOf, type ClaimToken } from './status-sql.ts';

/**
 * A claim counts one attempt. Claiming a failed row (its job retried on the queue dashboard) is a
 * re-send, like requeueFailed's: a fresh delivery, its attempts from 1 and its horizon from now.
 */
const COUNT_ATTEMPT = `email_attempts = case when email_status = '${FAILED}' then 1 else email_attempts + 1 end,
            requeued_at = case when email_status = '${FAILED}' then now() else requeued_at end`;

/** A row claimed: its attempt number, and the claim its outcome is written under. */
export type RowClaim = { attempt: number; claim: ClaimToken };

/**
 * Compare-and-set: only one worker moves the row to `sending`, so a job that runs twice sends once.
 * A `sending` row whose claim is older than the lease belongs to a dead worker and may be taken.
 * Undefined when the row is not claimable.
 */
export async function claimRow(em: EntityManager, kind: KindFor<'claim'>, id: string, claimLeaseMs: number): Promise<RowClaim | undefined> {
  const [claimed] = await em.execute<Array<{ email_attempts: number; claim: ClaimToken }>>(
    `update ${tableOf(kind)}
        set email_status = ${statusAfter(kind, 'claim')}, claimed_at = now(), ${COUNT_ATTEMPT}
      where id = ?${andStatus(kind, 'claim', { claimExpired: 'claimed_at < now() - make_interval(secs => ?)' })}
      returning email_attempts, ${claimTokenOf('claimed_at')} as claim`,
    [id, claimLeaseMs / 1000],
  );
  return claimed && { attempt: claimed.email_attempts, claim: claimed.claim };
}

/**
 * Whether the row is still `claim` (no other worker took it since): asked just before sending by a
 * worker whose claim may have passed its lease, so that it does not send what another sends.
 */
export async function holdsClaim(em: EntityManager, kind: KindFor<'claim'>, id: string, claim: ClaimToken): Promise<boolean> {
  const rows = await em.execute<Array<{ id: string }>>(`select id from ${tableOf(kind)} where id = ? and ${OWN_CLAIM.ownClaim}`, [id, claim]);
  return rows.length > 0;
}

/** What the submission email needs of its row, loaded by the statement that claims it. */
export type ClaimedSubmission = {
  id: string;
  email: string;
  message: string;
  subject: string;
  customFields: CustomFields;
  createdAt: Date;
  /** The key owner's address; null only if the key row were gone (the foreign key forbids it). */
  keyEmail: string | null;
  attachmentCount: number;
  /** Set while the key's address is suppressed after hard bounces: the email is not attempted. */
  suppressedUntil: Date | null;
  /** The key's mailbox reported one of these emails as spam: not attempted until its owner signs in. */
  complained: boolean;
  /** The key has added recipients (src/shared/recipients): the message is copied to them once the spam check lets it through. */
  hasRecipients: boolean;
  /** The key's label when its owner asked for it before the email's subject; null otherwise. */
  subjectLabel: string | null;
  /** The key's label, for a subject pattern's {key}; and the owner's layout of the email. */
  keyLabel: string | null;
  emailLayout: { subject: string | null; fieldOrder: string[]; hiddenFields: string[]; files: 'attach' | 'link' };
  /** The key owner's mailbox: whose own spam statistics apply. */
  keyMailbox: string | null;
  spamFilter: SpamFilterLevel;
  /** Whether the owner taught enough marks for their own spam statistics to count. */
  ownerStatistics: boolean;
  /** The verdict of an earlier attempt (checked once per submission), and the owner's mark. */
  spamVerdict: SpamVerdict | null;
  spamMark: SpamMark | null;
  /** The visitor's address as the API saw it (TRUST_PROXY): what the spam check looks up on blocklists. */
  clientIp: string | null;
  /** A test message from the owner console: marked as a test; no spam check (spamFilter off) and no autoresponse (autoresponseOn false). */
  test: boolean;
  /** Whether the key sends an autoresponse: turned on, with a subject and a text. */
  autoresponseOn: boolean;
};

/** A claimed submission: its attempt number, its claim, and what its email needs. */
export type SubmissionClaim = RowClaim & {
  submission: ClaimedSubmission;
  /**
   * The `submission.created` webhook deliveries this claim wrote, for their jobs: those the API left
   * to the workers and whose own job has not written them yet (it was lost, or has not run).
   */
  newWebhookDeliveryIds: string[];
};

/** The claim of src/workers/delivery/submission-claims.ts, by name: each connection parses and plans it once. */
const CLAIM_SUBMISSIONS = {
  name: 'claim-submissions',
  text: `with claimed as (
       update submissions
          set email_status = ${statusAfter('submission', 'claim')}, claimed_at = now(), ${COUNT_ATTEMPT}
        where id = any($1::uuid[])${andStatus('submission', 'claim', { claimExpired: 'claimed_at < now() - make_interval(secs => $2)' })}
        returning id, key_id, email, message, subject, custom_fields, created_at, email_attempts, spam_verdict, spam_mark, claimed_at, client_ip, test),
     -- Each enabled endpoint the key had when the submission came: its delivery, unless written
     -- already (under its fixed id, createdEventId of src/shared/webhooks/created-event-id.ts, or
     -- under another by a version that wrote them at intake).
     webhooks as (
       insert into webhook_deliveries (id, endpoint_id, submission_id)
       select substr(encode(sha256(convert_to(c.id::text || '/' || e.id::text, 'UTF8')), 'hex'), 1, 32)::uuid, e.id, c.id
         from claimed c join webhook_endpoints e on e.key_id = c.key_id and e.enabled and e.created_at <= c.created_at
        where not exists (select 1 from webhook_deliveries d where d.submission_id = c.id and d.endpoint_id = e.id and d.event = 'submission.created')
       on conflict (id) do nothing
       returning id, submission_id)
     select c.id, c.email, c.message, c.subject, c.custom_fields, c.email_attempts, ${claimTokenOf('c.claimed_at')} as claim, k.email as key_email,
            -- A test message is not checked for spam, so it teaches the filter nothing, and gets no autoresponse.
            k.mailbox as key_mailbox, case when c.test then 'off' else k.spam_filter end as spam_filter, c.spam_verdict, c.spam_mark, c.client_ip, c.test,
            case when k.subject_prefix then k.label end as subject_label, k.label as key_label,
            k.email_subject, k.email_field_order, k.email_hidden_fields, k.email_files,
            -- Milliseconds since the epoch: unambiguous, whatever text form the driver gives a timestamptz.
            (extract(epoch from c.created_at) * 1000)::float8 as created_ms,
            (select count(*)::int from attachments a where a.submission_id = c.id) as attachment_count,
            case when b.suppressed_until > now() then (extract(epoch from b.suppressed_until) * 1000)::float8 end as suppressed_ms,
            mc.complained_at is not null as complained,
            exists (select 1 from key_recipients r where r.key_id = c.key_id) as has_recipients,
            coalesce(not c.test and k.autoresponse_enabled and k.autoresponse_subject is not null and k.autoresponse_text is not null, false) as autoresponse_on,
            array(select w.id from webhooks w where w.submission_id = c.id) as new_webhook_delivery_ids,
            coalesce((select m.spam >= $3 and m.ham >= $3 from owner_spam_marks m
              where m.mailbox = k.mailbox), false) as owner_statistics
       from claimed c left join verification_keys k on k.id = c.key_id
            left join address_bounces b on b.address = k.email
            left join mailbox_complaints mc on mc.mailbox = k.mailbox`,
};

/**
 * The claims of submissions (each the same compare-and-set as claimRow, so only one worker claims
 * a row) and what their emails need, in one statement: the rows, their keys' addresses and how
 * many files each has. Hydrating the row and its key through the ORM was a large share of a
 * worker's CPU (docs/benchmarks.md#scenarios-and-targets); the jobs that start together share the statement
 * (src/workers/delivery/submission-claims.ts). One result per id, in order, undefined for a row that is not
 * claimable; an id given twice is claimed for its first occurrence only, so it is sent once.
 * A prepared statement with the ids as one array parameter: the same text whatever the batch's
 * size, so PostgreSQL parses and plans it once per connection instead of once per batch.
 * `ownerMinLearns`: the marks of each kind an owner's own spam statistics need to count (the spam
 * feature's OWNER_MIN_LEARNS, handed in by the worker: submissions imports nothing of spam).
 */
export async function claimSubmissions(
  db: StatementRunner,
  ids: string[],
  claimLeaseMs: number,
  ownerMinLearns: number,
): Promise<Array<SubmissionClaim | undefined>> {
  const { rows } = await db.query<{
    id: string;
    email: string;
    message: string;
    subject: string;
    custom_fields: CustomFields;
    created_ms: number;
    email_attempts: number;
    claim: ClaimToken;
    key_email: string | null;
    attachment_count: number;
    suppressed_ms: number | null;
    complained: boolean;
    has_recipients: boolean;
    key_mailbox: string | null;
    subject_label: string | null;
    key_label: string | null;
    email_subject: string | null;
    email_field_order: string[] | null;
    email_hidden_fields: string[] | null;
    email_files: 'attach' | 'link' | null;
    spam_filter: SpamFilterLevel | null;
    spam_verdict: SpamVerdict | null;
    spam_mark: SpamMark | null;
    owner_statistics: boolean;
    client_ip: string | null;
    test: boolean;
    autoresponse_on: boolean;
    new_webhook_delivery_ids: string[];
  }>({ ...CLAIM_SUBMISSIONS, values: [ids, claimLeaseMs / 1000, ownerMinLearns] });
  const byId = new Map(rows.map((row) => [row.id, row]));
  return ids.map((id) => {
    // PostgreSQL answers a uuid in lower case.
    const row = byId.get(id.toLowerCase());
    if (!row) return undefined;
    byId.delete(row.id);
    return {
      attempt: row.email_attempts,
      claim: row.claim,
      submission: {
        id: row.id,
        email: row.email,
        message: row.message,
        subject: row.subject,
        customFields: row.custom_fields,
        createdAt: new Date(row.created_ms),
        keyEmail: row.key_email,
        attachmentCount: row.attachment_count,
        suppressedUntil: row.suppressed_ms === null ? null : new Date(row.suppressed_ms),
        complained: row.complained,
        hasRecipients: row.has_recipients,
        keyMailbox: row.key_mailbox,
        subjectLabel: row.subject_label,
        keyLabel: row.key_label,
        emailLayout: {
          subject: row.email_subject,
          fieldOrder: row.email_field_order ?? [],
          hiddenFields: row.email_hidden_fields ?? [],
          files: row.email_files ?? 'attach',
        },
        spamFilter: row.spam_filter ?? 'off',
        ownerStatistics: row.owner_statistics,
        spamVerdict: row.spam_verdict,
        spamMark: row.spam_mark,
        clientIp: row.client_ip,
        test: row.test,
        autoresponseOn: row.autoresponse_on,
      },
      newWebhookDeliveryIds: row.new_webhook_delivery_ids,
    };
  });
}

/** Gives a claimed row back untouched (not an attempt): `queued` again, its attempt uncounted. False when it is not (or no longer) `claim`. */
export async function releaseClaim(em: EntityManager, kind: KindFor<'release-claim'>, id: string, claim: ClaimToken): Promise<boolean> {
  const result = await em.execute<{ affectedRows: number }>(
    `update ${tableOf(kind)} set email_status = ${statusAfter(kind, 'release-claim')}, claimed_at = null, email_attempts = greatest(email_attempts - 1, 0)
      where id = ?${andStatus(kind, 'release-claim', OWN_CLAIM)}`,
    [id, claim],
    'run',
  );
  return result.affectedRows > 0;
}

// The recipient_copies table's reads and its housekeeping: each submission's copies as the records
// show them, what a copy's email needs, and the held copies whose recipient never confirmed. Their
// statuses are written by the delivery state machine (src/shared/deliveries).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { BounceType } from '../../words/bounce-columns.ts';
import type { EmailStatus } from '../../deliveries/delivery-columns.ts';
import type { CustomFields } from '../../submissions/entities.ts';
import { HELD } from '../../deliveries/delivery-statuses.ts';

export type CopyRow = {
  id: string;
  submission_id: string;
  email: string;
  email_status: EmailStatus;
  email_attempts: number;
  last_error: string | null;
  sent_at: Date | null;
  bounce_type: BounceType | null;
  bounce_status: string | null;
  bounce_diagnostic: string | null;
  bounce_mta: string | null;
  bounced_at: Date | null;
  created_at: Date;
  /** The owner removed the address since the copy was made. */
  removed: boolean;
};

/** The copies of some submissions, each submission's in the order its recipients were added. */
export async function findCopiesOf(em: EntityManager, submissionIds: string[]): Promise<CopyRow[]> {
  if (submissionIds.length === 0) return [];
  const rows = await em.execute<CopyRow[]>(
    `select c.id, c.submission_id, c.email, c.email_status, c.email_attempts, c.last_error, c.sent_at, c.bounce_type, c.bounce_status,
            c.bounce_diagnostic, c.bounce_mta, c.bounced_at, c.created_at, c.recipient_id is null as removed
       from recipient_copies c left join key_recipients r on r.id = c.recipient_id
      where c.submission_id = any(?::uuid[])
      order by r.created_at nulls last, c.created_at, c.id`,
    [`{${submissionIds.join(',')}}`],
  );
  return rows.map((row) => ({
    ...row,
    sent_at: row.sent_at && new Date(row.sent_at),
    bounced_at: row.bounced_at && new Date(row.bounced_at),
    created_at: new Date(row.created_at),
  }));
}

/** The copy of submission `submissionId` with id `copyId`, when there is one: its status and whether its recipient is still added. */
export async function findCopyOfSubmission(
  em: EntityManager,
  submissionId: string,
  copyId: string,
): Promise<{ id: string; email_status: EmailStatus; removed: boolean } | undefined> {
  const [row] = await em.execute<Array<{ id: string; email_status: EmailStatus; removed: boolean }>>(
    'select id, email_status, recipient_id is null as removed from recipient_copies where id = ? and submission_id = ?',
    [copyId, submissionId],
  );
  return row;
}

/** What a copy's email needs: its address, the submission, the key's layout of the email, and what came back from the address before. */
export type CopyToSend = {
  email: string;
  /** The recipient it is for, null once removed; whether that one is confirmed. */
  recipientId: string | null;
  confirmed: boolean;
  ownerEmail: string;
  /** `test`: a test message from the owner console, marked as one. */
  submission: {
    id: string;
    email: string;
    message: string;
    subject: string;
    customFields: CustomFields;
    createdAt: Date;
    attachmentCount: number;
    test: boolean;
  };
  keyLabel: string | null;
  subjectLabel: string | null;
  layout: { subject: string | null; fieldOrder: string[]; hiddenFields: string[]; files: 'attach' | 'link' };
  complained: boolean;
  suppressedUntil: Date | null;
};

export async function findCopyToSend(em: EntityManager, id: string): Promise<CopyToSend | undefined> {
  const [row] = await em.execute<
    Array<{
      email: string;
      recipient_id: string | null;
      confirmed: boolean;
      owner_email: string;
      submission_id: string;
      visitor_email: string;
      message: string;
      subject: string;
      custom_fields: CustomFields;
      test: boolean;
      created_ms: number;
      attachment_count: number;
      key_label: string | null;
      subject_label: string | null;
      email_subject: string | null;
      email_field_order: string[];
      email_hidden_fields: string[];
      email_files: 'attach' | 'link';
      complained: boolean;
      suppressed_ms: number | null;
    }>
  >(
    `select c.email, r.id as recipient_id, r.confirmed_at is not null as confirmed, k.email as owner_email,
            s.id as submission_id, s.email as visitor_email, s.message, s.subject, s.custom_fields, s.test,
            (extract(epoch from s.created_at) * 1000)::float8 as created_ms,
            (select count(*)::int from attachments a where a.submission_id = s.id) as attachment_count,
            k.label as key_label, case when k.subject_prefix then k.label end as subject_label,
            k.email_subject, k.email_field_order, k.email_hidden_fields, k.email_files,
            exists (select 1 from mailbox_complaints mc where mc.mailbox = c.mailbox) as complained,
            (select (extract(epoch from b.suppressed_until) * 1000)::float8 from address_bounces b
              where b.address = c.email and b.suppressed_until > now()) as suppressed_ms
       from recipient_copies c join submissions s on s.id = c.submission_id join verification_keys k on k.id = c.key_id
            left join key_recipients r on r.id = c.recipient_id
      where c.id = ?`,
    [id],
  );
  if (!row) return undefined;
  return {
    email: row.email,
    recipientId: row.recipient_id,
    confirmed: row.confirmed,
    ownerEmail: row.owner_email,
    submission: {
      id: row.submission_id,
      email: row.visitor_email,
      message: row.message,
      subject: row.subject,
      customFields: row.custom_fields,
      createdAt: new Date(row.created_ms),
      attachmentCount: row.attachment_count,
      test: row.test,
    },
    keyLabel: row.key_label,
    subjectLabel: row.subject_label,
    layout: { subject: row.email_subject, fieldOrder: row.email_field_order, hiddenFields: row.email_hidden_fields, files: row.email_files },
    complained: row.complained,
    suppressedUntil: row.suppressed_ms === null ? null : new Date(row.suppressed_ms),
  };
}

/** Held copies older than `days` (their recipient never confirmed); how many were deleted. */
export async function deleteOldHeldCopies(em: EntityManager, days: number): Promise<number> {
  const result = await em.execute<{ affectedRows: number }>(
    `delete from recipient_copies where email_status = '${HELD}' and created_at < now() - make_interval(days => ?)`,
    [days],
    'run',
  );
  return result.affectedRows;
}

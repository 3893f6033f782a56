// A submission as the spam check reads it, outside the email's claim (which loads the same in its
// own statement): for a webhook's worker that checks the submission while its email waits.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { ClaimedSubmission } from '../../deliveries/deliveries.ts';
import type { EmailStatus } from '../../deliveries/delivery-columns.ts';

/** What a spam check reads of a submission: its content, its key's level and owner, a verdict or mark already there. */
export type CheckedSubmission = Pick<
  ClaimedSubmission,
  | 'id'
  | 'email'
  | 'message'
  | 'subject'
  | 'customFields'
  | 'keyEmail'
  | 'keyMailbox'
  | 'spamFilter'
  | 'ownerStatistics'
  | 'spamVerdict'
  | 'spamMark'
  | 'clientIp'
>;

/** What the check reads, as the claim gives it; and the email's status, whether a worker holds it. */
export type SubmissionToCheck = CheckedSubmission & Pick<ClaimedSubmission, 'attachmentCount'> & { emailStatus: EmailStatus };

/** `ownerMinLearns`: the marks of each kind an owner's own statistics need to count (OWNER_MIN_LEARNS). */
export async function findSubmissionToCheck(em: EntityManager, id: string, ownerMinLearns: number): Promise<SubmissionToCheck | undefined> {
  const [row] = await em.execute<
    Array<{
      id: string;
      email: string;
      message: string;
      subject: string;
      custom_fields: ClaimedSubmission['customFields'];
      key_email: string | null;
      key_mailbox: string | null;
      spam_filter: ClaimedSubmission['spamFilter'] | null;
      owner_statistics: boolean;
      spam_verdict: ClaimedSubmission['spamVerdict'];
      spam_mark: ClaimedSubmission['spamMark'];
      client_ip: string | null;
      attachment_count: number;
      email_status: EmailStatus;
    }>
  >(
    `select s.id, s.email, s.message, s.subject, s.custom_fields, s.spam_verdict, s.spam_mark, s.client_ip, s.email_status,
            k.email as key_email, k.mailbox as key_mailbox, k.spam_filter,
            (select count(*)::int from attachments a where a.submission_id = s.id) as attachment_count,
            coalesce((select m.spam >= ? and m.ham >= ? from owner_spam_marks m where m.mailbox = k.mailbox), false) as owner_statistics
       from submissions s left join verification_keys k on k.id = s.key_id
      where s.id = ?`,
    [ownerMinLearns, ownerMinLearns, id],
  );
  if (!row) return undefined;
  return {
    id: row.id,
    email: row.email,
    message: row.message,
    subject: row.subject,
    customFields: row.custom_fields,
    keyEmail: row.key_email,
    keyMailbox: row.key_mailbox,
    spamFilter: row.spam_filter ?? 'off',
    ownerStatistics: row.owner_statistics,
    spamVerdict: row.spam_verdict,
    spamMark: row.spam_mark,
    clientIp: row.client_ip,
    attachmentCount: row.attachment_count,
    emailStatus: row.email_status,
  };
}

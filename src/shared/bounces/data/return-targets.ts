// The rows a return path names (a submission or a key email), as a report that came back reads
// them: locked, with the address and the mailbox their email went to.
import type pg from 'pg';
import type { BounceType } from '../../words/bounce-columns.ts';
import type { EmailStatus } from '../../deliveries/delivery-columns.ts';
import type { ReturnTarget } from '../return-path.ts';

export const REPORTED_TABLE = {
  submission: 'submissions',
  'key-email': 'key_emails',
  autoresponse: 'autoresponses',
  'recipient-copy': 'recipient_copies',
} as const;
/** The address and the mailbox the email went to: the key's for a submission, the row's own for a key email. */
const RECIPIENT = {
  submission:
    '(select k.email from verification_keys k where k.id = t.key_id) as address, (select k.mailbox from verification_keys k where k.id = t.key_id) as mailbox',
  'key-email': 't.email as address, t.mailbox',
  // The visitor's address: its bounces count against it, and its complaint suppresses its mailbox.
  autoresponse: 't.email as address, t.mailbox',
  // The added recipient's address: its bounces and its complaint are its own, never the key's or another recipient's.
  'recipient-copy': 't.email as address, t.mailbox',
} as const;

export type ReportedRow = { email_status: EmailStatus; bounce_type: BounceType | null; address: string | null; mailbox: string | null; key_id: string | null };

/** The row, locked until the transaction ends; undefined when there is none (retention deleted it, say). */
export async function lockReportedRow(client: pg.PoolClient, target: ReturnTarget): Promise<ReportedRow | undefined> {
  const { rows } = await client.query<ReportedRow>(
    `select t.email_status, t.bounce_type, ${RECIPIENT[target.kind]}, t.key_id from ${REPORTED_TABLE[target.kind]} t where t.id = $1 for update`,
    [target.id],
  );
  return rows[0];
}

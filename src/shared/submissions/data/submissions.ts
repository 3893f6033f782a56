// The submissions table for the HTTP adapters: saving an accepted submission (alone, in a group
// commit of many rows, or with its files and webhook deliveries in one statement), and reading a
// row by id, a row of an owner's, its key and its email's status.
import type { EntityManager } from '@mikro-orm/postgresql';
import { SubmissionSchema, type CustomFields, type EmailStatus, type Submission } from '../../db/entities.ts';

/** The columns of a submission row, in the order of SUBMISSION_COLUMNS (submissionRow makes one). */
export type SubmissionRow = unknown[];
const SUBMISSION_COLUMNS = 'id, key_id, email, message, subject, custom_fields, email_status, client_ip, origin';
const ROW_PLACEHOLDERS = '(?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?)';

/** A new submission's values, as the row that insertSubmissionRows and insertSubmissionWithRelated take. */
export function submissionRow(values: {
  id: string;
  keyId: string;
  email: string;
  message: string;
  subject: string;
  customFields: CustomFields;
  emailStatus: EmailStatus;
  clientIp: string;
  origin: string | null;
}): SubmissionRow {
  return [
    values.id,
    values.keyId,
    values.email,
    values.message,
    values.subject,
    JSON.stringify(values.customFields),
    values.emailStatus,
    values.clientIp,
    values.origin,
  ];
}

/** Submissions without files, in one plain INSERT (one implicit transaction, one round trip). */
export async function insertSubmissionRows(em: EntityManager, rows: SubmissionRow[]): Promise<void> {
  await em.execute(`insert into submissions (${SUBMISSION_COLUMNS}) values ${rows.map(() => ROW_PLACEHOLDERS).join(', ')}`, rows.flat());
}

/** A stored file of a new submission, as its attachments row gets it. */
export type NewAttachment = { fieldName: string; filename: string; contentType: string; size: number; storageKey: string; sha256: string };

/**
 * Inserts the row, its attachments and one webhook delivery per endpoint (`webhookDeliveryIds[i]`
 * for `webhookEndpointIds[i]`) in one statement. With files, the same statement charges their bytes
 * to the key; false, and nothing inserted, when that would pass `quotaBytes`.
 */
export async function insertSubmissionWithRelated(
  em: EntityManager,
  row: SubmissionRow,
  related: { files: NewAttachment[]; quotaBytes: number; webhookDeliveryIds: string[]; webhookEndpointIds: string[] },
): Promise<boolean> {
  const files = related.files.map((file) => ({
    field_name: file.fieldName,
    filename: file.filename,
    content_type: file.contentType,
    size: file.size,
    storage_key: file.storageKey,
    sha256: file.sha256,
  }));
  // One statement: a PL/pgSQL function (migration insert_submission_function) whose statements
  // keep their plans for the session; the same statements as one CTE sent as text were parsed and
  // planned on every request (docs/benchmarks.md).
  const [result] = await em.execute<Array<{ ok: boolean }>>(
    'select cfs_insert_submission(?::bigint, ?::bigint, ?::uuid, ?::uuid, ?, ?, ?, ?::jsonb, ?, ?, ?, ?::uuid[], ?::uuid[], ?::jsonb) as ok',
    [
      // The files' bytes and the key's quota; null for none: no charge without files.
      ...(related.files.length > 0 ? [related.files.reduce((total, file) => total + file.size, 0), related.quotaBytes] : [null, null]),
      ...row,
      // Array literals: the driver would spread a JS array into a list.
      `{${related.webhookDeliveryIds.join(',')}}`,
      `{${related.webhookEndpointIds.join(',')}}`,
      JSON.stringify(files),
    ],
  );
  return result?.ok === true;
}

/** The email status of the submission with this id; undefined when there is no such row. */
export async function readEmailStatus(em: EntityManager, id: string): Promise<EmailStatus | undefined> {
  const [row] = await em.execute<Array<{ email_status: EmailStatus }>>('select email_status from submissions where id = ?', [id]);
  return row?.email_status;
}

/** The submission with this id (a UUID), or null. */
export async function findSubmissionById(em: EntityManager, id: string): Promise<Submission | null> {
  return em.findOne(SubmissionSchema, id);
}

/** The submission with this id when its key's address is `email`; null otherwise (not the owner's, or no such row). */
export async function findSubmissionOfOwner(em: EntityManager, email: string, id: string): Promise<Submission | null> {
  return em.findOne(SubmissionSchema, { id, key: { email } });
}

/** Loads the submission's key row into `submission.key` (its fields beyond the id). */
export async function loadSubmissionKey(em: EntityManager, submission: Submission): Promise<void> {
  await em.populate(submission, ['key']);
}

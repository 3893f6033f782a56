// Saving an accepted submission: the row and its attachments in one statement (so one
// implicit transaction and one round trip: this runs on every submission, see npm run bench).
// With files, the key's storage quota is charged in the same transaction.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailStatus } from '../../shared/db/entities.ts';
import type { ActiveKey } from '../../shared/keys.ts';
import type { GroupCommit } from '../../shared/group-commit.ts';
import { errors } from '../errors.ts';
import type { Admission } from './admit.ts';
import type { SubmissionInput } from './input.ts';

export type StoredFile = {
  fieldName: string;
  filename: string;
  contentType: string;
  size: number;
  storageKey: string;
  sha256: string;
};

export type NewSubmission = {
  id: string;
  key: ActiveKey;
  input: SubmissionInput;
  files: StoredFile[];
  clientIp: string;
  origin: string | undefined;
  /** KEY_STORAGE_QUOTA_MB: the bytes of files a key may keep stored. */
  storageQuotaMb: number;
  /** Decides the email's fate (src/api/submissions/admit.ts); `writes` when it changes rows. */
  admit: { run: (em: EntityManager) => Promise<Admission>; writes: boolean };
  /**
   * Where the common case's row goes (no files, no admission writes): a group commit of
   * `insertSubmissionRows`, so that concurrent requests share one multi-row INSERT. Without it, the
   * row is inserted alone.
   */
  insertRow?: GroupCommit<SubmissionRow>;
};

/** The columns of a submission row, in the order of SUBMISSION_COLUMNS. */
export type SubmissionRow = unknown[];
const SUBMISSION_COLUMNS = 'id, key_id, email, message, subject, custom_fields, email_status, client_ip, origin';
const ROW_PLACEHOLDERS = '(?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?)';

export type SavedSubmission = { id: string; emailStatus: EmailStatus; confirmEmailId?: string };

export const defaultSubject = (email: string) => `New contact form submission from ${email}`;

/**
 * Admits and saves. For a confirmed mailbox this is one statement (with files, the quota charge
 * included), and without files it joins the group commit; admission writes (an unconfirmed
 * mailbox) make it one transaction. Either way a refusal (quota, consent) leaves no row, no charge
 * and no email behind.
 */
export async function saveSubmission(em: EntityManager, submission: NewSubmission): Promise<SavedSubmission> {
  const save = async (tx: EntityManager): Promise<SavedSubmission> => {
    const admission = await submission.admit.run(tx);
    if (submission.files.length > 0) await chargeStorage(tx, submission);
    await insertSubmission(tx, submission, admission.emailStatus);
    return { id: submission.id, emailStatus: admission.emailStatus, confirmEmailId: admission.confirmEmailId };
  };
  if (submission.admit.writes) return em.transactional(save);
  const admission = await submission.admit.run(em);
  if (submission.files.length > 0) {
    // One statement charges the quota and inserts: the key row's lock lasts only that statement.
    if (!(await insertSubmission(em, submission, admission.emailStatus, true))) throw errors.storageQuota(submission.storageQuotaMb);
    return { id: submission.id, emailStatus: admission.emailStatus, confirmEmailId: admission.confirmEmailId };
  }
  const row = submissionRow(submission, admission.emailStatus);
  await (submission.insertRow ? submission.insertRow(row) : insertSubmissionRows(em, [row]));
  return { id: submission.id, emailStatus: admission.emailStatus, confirmEmailId: admission.confirmEmailId };
}

/** Submissions without files, in one plain INSERT (one implicit transaction, one round trip). */
export async function insertSubmissionRows(em: EntityManager, rows: SubmissionRow[]): Promise<void> {
  await em.execute(`insert into submissions (${SUBMISSION_COLUMNS}) values ${rows.map(() => ROW_PLACEHOLDERS).join(', ')}`, rows.flat());
}

function submissionRow(submission: NewSubmission, emailStatus: EmailStatus): SubmissionRow {
  const { input } = submission;
  return [
    submission.id,
    submission.key.id,
    input.email,
    input.message,
    input.subject ?? defaultSubject(input.email),
    JSON.stringify(input.customFields),
    emailStatus,
    submission.clientIp,
    submission.origin ?? null,
  ];
}

/** Adds the files' bytes to the key's stored total, unless that would pass the quota. */
const CHARGE_STORAGE = 'update verification_keys set stored_bytes = stored_bytes + ? where id = ? and stored_bytes + ? <= ? returning id';
const chargeValues = (submission: NewSubmission) => {
  const bytes = submission.files.reduce((total, file) => total + file.size, 0);
  return [bytes, submission.key.id, bytes, submission.storageQuotaMb * 1024 * 1024];
};

/** Charges the files' bytes to the key, refusing (413) what would pass the quota. */
async function chargeStorage(tx: EntityManager, submission: NewSubmission): Promise<void> {
  const charged = await tx.execute(CHARGE_STORAGE, chargeValues(submission));
  if (charged.length === 0) throw errors.storageQuota(submission.storageQuotaMb);
}

/**
 * Inserts the row and its attachments. With `charge`, the same statement charges the files' bytes
 * and inserts nothing when that would pass the quota: false then.
 */
async function insertSubmission(em: EntityManager, submission: NewSubmission, emailStatus: EmailStatus, charge = false): Promise<boolean> {
  const values = submissionRow(submission, emailStatus);
  if (submission.files.length === 0) {
    // A plain INSERT: the CTE below costs PostgreSQL about a third more per row even with no files
    // to unpack (npm run bench).
    await insertSubmissionRows(em, [values]);
    return true;
  }
  const files = submission.files.map((file) => ({
    field_name: file.fieldName,
    filename: file.filename,
    content_type: file.contentType,
    size: file.size,
    storage_key: file.storageKey,
    sha256: file.sha256,
  }));
  const inserted = await em.execute(
    `with ${charge ? `charged as (${CHARGE_STORAGE}),` : ''}
     submission as (
       insert into submissions (${SUBMISSION_COLUMNS})
       ${charge ? 'select ?::uuid, ?::uuid, ?, ?, ?, ?::jsonb, ?, ?, ? from charged' : `values ${ROW_PLACEHOLDERS}`}
       returning id
     )
     insert into attachments (id, submission_id, field_name, filename, content_type, size, storage_key, sha256, created_at)
     select gen_random_uuid(), submission.id, f.field_name, f.filename, f.content_type, f.size, f.storage_key, f.sha256,
            clock_timestamp() -- increases row by row, so the files keep their order
       from submission,
            rows from (jsonb_to_recordset(?::jsonb)
              as (field_name text, filename text, content_type text, size bigint, storage_key text, sha256 text))
            with ordinality as f(field_name, filename, content_type, size, storage_key, sha256, position)
      order by f.position
     returning 1`,
    [...(charge ? chargeValues(submission) : []), ...values, JSON.stringify(files)],
  );
  return inserted.length > 0;
}

const POLL_MS = 50;

/** Waits up to `timeoutMs` for the delivery to end (`sent` or `failed`); returns the status then. */
export async function waitForDelivery(em: EntityManager, id: string, timeoutMs: number): Promise<EmailStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const [row] = await em.execute<Array<{ email_status: EmailStatus }>>('select email_status from submissions where id = ?', [id]);
    const status = row?.email_status ?? 'queued';
    if (status === 'sent' || status === 'failed' || Date.now() + POLL_MS > deadline) return status;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

// Saving an accepted submission: the row, its attachments and its webhook deliveries in one statement (so one
// implicit transaction and one round trip: this runs on every submission, see npm run bench).
// With files, the key's storage quota is charged in the same transaction.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailStatus } from '../../shared/infra/db/entities.ts';
import type { ActiveKey } from '../../shared/keys/keys.ts';
import type { GroupCommit } from '../../shared/infra/group-commit.ts';
import { defaultSubject } from '../../shared/submissions/submissions.ts';
import { inTransaction } from '../../shared/infra/db/transactions.ts';
import { readEmailStatus } from '../../shared/submissions/data/submissions.ts';
import { insertSubmissionRows, insertSubmissionWithFiles, submissionRow as newRow, type SubmissionRow } from '../../shared/submissions/data/delivery-status.ts';
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

/** `webhookDeliveryIds`: the delivery rows made for the key's webhooks, to enqueue after the commit. */
export type SavedSubmission = { id: string; emailStatus: EmailStatus; confirmEmailId?: string; webhookDeliveryIds: string[] };

/**
 * Admits and saves. For a confirmed mailbox this is one statement (with files, the quota charge
 * included), and without files it joins the group commit; admission writes (an unconfirmed
 * mailbox) make it one transaction. Either way a refusal (quota, consent) leaves no row, no charge
 * and no email behind.
 */
export async function saveSubmission(em: EntityManager, submission: NewSubmission): Promise<SavedSubmission> {
  const webhookDeliveryIds = submission.key.webhookEndpointIds.map(() => randomUUID());
  const saved = (admission: Admission): SavedSubmission => ({
    id: submission.id,
    emailStatus: admission.emailStatus,
    confirmEmailId: admission.confirmEmailId,
    webhookDeliveryIds,
  });
  if (submission.admit.writes) {
    return inTransaction(em, async (tx) => {
      const admission = await submission.admit.run(tx);
      await insertSubmission(tx, submission, admission.emailStatus, webhookDeliveryIds);
      return saved(admission);
    });
  }
  const admission = await submission.admit.run(em);
  if (submission.files.length > 0 || webhookDeliveryIds.length > 0) {
    // One statement charges the quota and inserts: the key row's lock lasts only that statement.
    await insertSubmission(em, submission, admission.emailStatus, webhookDeliveryIds);
    return saved(admission);
  }
  const row = submissionRow(submission, admission.emailStatus);
  await (submission.insertRow ? submission.insertRow(row) : insertSubmissionRows(em, [row]));
  return saved(admission);
}

function submissionRow(submission: NewSubmission, emailStatus: EmailStatus): SubmissionRow {
  const { input } = submission;
  return newRow({
    id: submission.id,
    keyId: submission.key.id,
    email: input.email,
    message: input.message,
    subject: input.subject ?? defaultSubject(input.email),
    customFields: input.customFields,
    emailStatus,
    clientIp: submission.clientIp,
    origin: submission.origin,
  });
}

/**
 * Inserts the row, its attachments and its webhook deliveries. With files, the same statement
 * charges their bytes to the key and inserts nothing when that would pass the quota (413).
 */
async function insertSubmission(em: EntityManager, submission: NewSubmission, emailStatus: EmailStatus, webhookDeliveryIds: string[]): Promise<void> {
  const values = submissionRow(submission, emailStatus);
  if (submission.files.length === 0 && webhookDeliveryIds.length === 0) {
    // A plain INSERT: the data-modifying CTE that preceded insertSubmissionWithRelated's function
    // cost PostgreSQL more per row even with no files to unpack (docs/benchmarks.md).
    await insertSubmissionRows(em, [values]);
    return;
  }
  const files = submission.files.map((file) => ({
    field_name: file.fieldName,
    filename: file.filename,
    content_type: file.contentType,
    size: file.size,
    storage_key: file.storageKey,
    sha256: file.sha256,
  }));
  const saved = await insertSubmissionWithFiles(em, values, {
    // No charge without files.
    charge:
      submission.files.length > 0
        ? { bytes: submission.files.reduce((total, file) => total + file.size, 0), quotaBytes: submission.storageQuotaMb * 1024 * 1024 }
        : undefined,
    webhookDeliveryIds,
    endpointIds: submission.key.webhookEndpointIds,
    files,
  });
  if (!saved) throw errors.storageQuota(submission.storageQuotaMb);
}

const POLL_MS = 50;

/** Waits up to `timeoutMs` for the delivery to end (`sent` or `failed`); returns the status then. */
export async function waitForDelivery(em: EntityManager, id: string, timeoutMs: number): Promise<EmailStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const status = (await readEmailStatus(em, id)) ?? 'queued';
    if (status === 'sent' || status === 'failed' || Date.now() + POLL_MS > deadline) return status;
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

// Saving an accepted submission: one transaction for the row and its attachments.
import type { EntityManager } from '@mikro-orm/postgresql';
import {
  AttachmentSchema,
  SubmissionSchema,
  type EmailStatus,
  type Submission,
  type VerificationKey,
} from '../../shared/db/entities.ts';
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
  key: VerificationKey;
  input: SubmissionInput;
  files: StoredFile[];
  clientIp: string;
  origin: string | undefined;
};

export const defaultSubject = (email: string) => `New contact form submission from ${email}`;

export async function saveSubmission(em: EntityManager, submission: NewSubmission): Promise<Submission> {
  const { input } = submission;
  return em.transactional(async (tx) => {
    const row = tx.create(SubmissionSchema, {
      id: submission.id,
      key: submission.key,
      email: input.email,
      message: input.message,
      subject: input.subject ?? defaultSubject(input.email),
      customFields: input.customFields,
      emailStatus: input.notEmailSent ? 'skipped' : 'queued',
      clientIp: submission.clientIp,
      origin: submission.origin ?? null,
    });
    for (const file of submission.files) tx.create(AttachmentSchema, { ...file, submission: row });
    return row;
  });
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

// Saving an accepted submission: the row and its attachments in one statement (so one
// implicit transaction and one round trip: this runs on every submission, see npm run bench).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailStatus } from '../../shared/db/entities.ts';
import type { ActiveKey } from '../../shared/keys.ts';
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
};

export type SavedSubmission = { id: string; emailStatus: EmailStatus };

export const defaultSubject = (email: string) => `New contact form submission from ${email}`;

export async function saveSubmission(em: EntityManager, submission: NewSubmission): Promise<SavedSubmission> {
  const { input } = submission;
  const emailStatus: EmailStatus = input.notEmailSent ? 'skipped' : 'queued';
  const files = submission.files.map((file) => ({
    field_name: file.fieldName,
    filename: file.filename,
    content_type: file.contentType,
    size: file.size,
    storage_key: file.storageKey,
    sha256: file.sha256,
  }));
  await em.execute(
    `with submission as (
       insert into submissions (id, key_id, email, message, subject, custom_fields, email_status, client_ip, origin)
       values (?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?)
       returning id
     )
     insert into attachments (id, submission_id, field_name, filename, content_type, size, storage_key, sha256, created_at)
     select gen_random_uuid(), submission.id, f.field_name, f.filename, f.content_type, f.size, f.storage_key, f.sha256,
            clock_timestamp() -- increases row by row, so the files keep their order
       from submission,
            rows from (jsonb_to_recordset(?::jsonb)
              as (field_name text, filename text, content_type text, size bigint, storage_key text, sha256 text))
            with ordinality as f(field_name, filename, content_type, size, storage_key, sha256, position)
      order by f.position`,
    [
      submission.id,
      submission.key.id,
      input.email,
      input.message,
      input.subject ?? defaultSubject(input.email),
      JSON.stringify(input.customFields),
      emailStatus,
      submission.clientIp,
      submission.origin ?? null,
      JSON.stringify(files),
    ],
  );
  return { id: submission.id, emailStatus };
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

// Saving an accepted submission: the row, its attachments and its webhook deliveries in one statement (so one
// implicit transaction and one round trip: this runs on every submission, see npm run bench).
// With files, the key's storage quota is charged in the same transaction.
import { randomUUID } from 'node:crypto';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailStatus } from '../../shared/db/entities.ts';
import type { ActiveKey } from '../../shared/keys.ts';
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
};

/** `webhookDeliveryIds`: the delivery rows made for the key's webhooks, to enqueue after the commit. */
export type SavedSubmission = { id: string; emailStatus: EmailStatus; confirmEmailId?: string; webhookDeliveryIds: string[] };

export const defaultSubject = (email: string) => `New contact form submission from ${email}`;

/**
 * Admits and saves. The common case (a confirmed mailbox, no files) is one statement; otherwise
 * one transaction, so a refusal (quota, consent) leaves no row, no charge and no email behind.
 */
export async function saveSubmission(em: EntityManager, submission: NewSubmission): Promise<SavedSubmission> {
  const save = async (tx: EntityManager): Promise<SavedSubmission> => {
    const admission = await submission.admit.run(tx);
    if (submission.files.length > 0) await chargeStorage(tx, submission);
    const webhookDeliveryIds = submission.key.webhookEndpointIds.map(() => randomUUID());
    await insertSubmission(tx, submission, admission.emailStatus, webhookDeliveryIds);
    return { id: submission.id, emailStatus: admission.emailStatus, confirmEmailId: admission.confirmEmailId, webhookDeliveryIds };
  };
  return submission.admit.writes || submission.files.length > 0 ? em.transactional(save) : save(em);
}

/** Adds the files' bytes to the key's stored total, refusing (413) what would pass the quota. */
async function chargeStorage(tx: EntityManager, submission: NewSubmission): Promise<void> {
  const bytes = submission.files.reduce((total, file) => total + file.size, 0);
  const charged = await tx.execute(
    'update verification_keys set stored_bytes = stored_bytes + ? where id = ? and stored_bytes + ? <= ? returning id',
    [bytes, submission.key.id, bytes, submission.storageQuotaMb * 1024 * 1024],
  );
  if (charged.length === 0) throw errors.storageQuota(submission.storageQuotaMb);
}

async function insertSubmission(em: EntityManager, submission: NewSubmission, emailStatus: EmailStatus, webhookDeliveryIds: string[]): Promise<void> {
  const { input } = submission;
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
     )${webhookDeliveryIds.length ? WEBHOOK_ROWS : ''}
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
      // Array literals: the driver would spread a JS array into a list.
      ...(webhookDeliveryIds.length ? [`{${webhookDeliveryIds.join(',')}}`, `{${submission.key.webhookEndpointIds.join(',')}}`] : []),
      JSON.stringify(files),
    ],
  );
}

/**
 * One delivery row per webhook endpoint of the key, in the same statement (so committed with the
 * submission, without another round trip). Only for keys with endpoints; an endpoint disabled or
 * deleted since the key was read gets no row.
 */
const WEBHOOK_ROWS = `,
     webhook_rows as (
       insert into webhook_deliveries (id, endpoint_id, submission_id)
       select h.id, h.endpoint_id, submission.id
         from submission, unnest(?::uuid[], ?::uuid[]) as h(id, endpoint_id)
         join webhook_endpoints e on e.id = h.endpoint_id and e.enabled
     )`;

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

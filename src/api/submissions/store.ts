// Saving an accepted submission: the row, its attachments and its webhook deliveries in one statement (so one
// implicit transaction and one round trip: this runs on every submission, see npm run bench).
// With files, the key's storage quota is charged in the same transaction.
import { randomUUID } from 'node:crypto';
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
  /**
   * The same for a confirmed mailbox's submission with files and no webhooks: a group commit of
   * `insertSubmissionsWithFiles` (one statement per batch, the quota charged per key in it).
   * Without it, the submission is written by its own statement.
   */
  insertWithFiles?: GroupCommit<FileSubmission>;
};

/** A submission with files, as `insertSubmissionsWithFiles` takes it; `failure` is set when it was not written (the quota refused it). */
export type FileSubmission = { id: string; row: Record<string, unknown>; quotaMb: number; failure?: unknown };

/** The columns of a submission row, in the order of SUBMISSION_COLUMNS. */
export type SubmissionRow = unknown[];
const SUBMISSION_COLUMNS = 'id, key_id, email, message, subject, custom_fields, email_status, client_ip, origin';
const ROW_PLACEHOLDERS = '(?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?)';

/** `webhookDeliveryIds`: the delivery rows made for the key's webhooks, to enqueue after the commit. */
export type SavedSubmission = { id: string; emailStatus: EmailStatus; confirmEmailId?: string; webhookDeliveryIds: string[] };

export const defaultSubject = (email: string) => `New contact form submission from ${email}`;

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
    return em.transactional(async (tx) => {
      const admission = await submission.admit.run(tx);
      if (submission.files.length > 0) await chargeStorage(tx, submission);
      await insertSubmission(tx, submission, admission.emailStatus, webhookDeliveryIds);
      return saved(admission);
    });
  }
  const admission = await submission.admit.run(em);
  if (submission.files.length > 0 && webhookDeliveryIds.length === 0 && submission.insertWithFiles) {
    const item = fileSubmission(submission, admission.emailStatus);
    await submission.insertWithFiles(item);
    if (item.failure) throw item.failure;
    return saved(admission);
  }
  if (submission.files.length > 0 || webhookDeliveryIds.length > 0) {
    // One statement charges the quota and inserts: the key row's lock lasts only that statement.
    const charge = submission.files.length > 0;
    if (!(await insertSubmission(em, submission, admission.emailStatus, webhookDeliveryIds, charge))) {
      throw errors.storageQuota(submission.storageQuotaMb);
    }
    return saved(admission);
  }
  const row = submissionRow(submission, admission.emailStatus);
  await (submission.insertRow ? submission.insertRow(row) : insertSubmissionRows(em, [row]));
  return saved(admission);
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

/**
 * Submissions with files (no webhooks), in one statement for all of them: the bytes of each key's
 * submissions in the batch are charged to it at once, and the rows and attachments of the keys
 * that were charged are inserted. A key whose batch total would pass its quota is charged nothing
 * and inserts nothing; its submissions are then tried again one by one, so that each is refused
 * (`failure`) only if it would pass the quota on its own.
 */
export async function insertSubmissionsWithFiles(em: EntityManager, items: FileSubmission[]): Promise<void> {
  const inserted = await em.execute<Array<{ id: string }>>(INSERT_WITH_FILES, [JSON.stringify(items.map((item) => item.row))]);
  if (inserted.length === items.length) return;
  const done = new Set(inserted.map((row) => row.id));
  const missed = items.filter((item) => !done.has(item.id));
  if (items.length === 1) {
    missed[0]!.failure = errors.storageQuota(missed[0]!.quotaMb);
    return;
  }
  // The others are committed: from here nothing may throw (the group commit would write them again).
  for (const item of missed) {
    await insertSubmissionsWithFiles(em, [item]).catch((error: unknown) => {
      item.failure = error;
    });
  }
}

function fileSubmission(submission: NewSubmission, emailStatus: EmailStatus): FileSubmission {
  const { input } = submission;
  return {
    id: submission.id,
    quotaMb: submission.storageQuotaMb,
    row: {
      id: submission.id,
      key_id: submission.key.id,
      email: input.email,
      message: input.message,
      subject: input.subject ?? defaultSubject(input.email),
      custom_fields: input.customFields,
      email_status: emailStatus,
      client_ip: submission.clientIp,
      origin: submission.origin ?? null,
      bytes: submission.files.reduce((total, file) => total + file.size, 0),
      quota: submission.storageQuotaMb * 1024 * 1024,
      files: submission.files.map((file) => ({
        field_name: file.fieldName,
        filename: file.filename,
        content_type: file.contentType,
        size: file.size,
        storage_key: file.storageKey,
        sha256: file.sha256,
      })),
    },
  };
}

// `n` and `position` keep the order of the submissions and of each one's files in `created_at`
// (clock_timestamp() increases row by row).
const INSERT_WITH_FILES = `
  with input as (
    select * from rows from (jsonb_to_recordset(?::jsonb) as (
        id uuid, key_id uuid, email text, message text, subject text, custom_fields jsonb, email_status text,
        client_ip text, origin text, bytes bigint, quota bigint, files jsonb))
      with ordinality as i(id, key_id, email, message, subject, custom_fields, email_status, client_ip, origin, bytes, quota, files, n)
  ),
  charged as (
    update verification_keys k set stored_bytes = k.stored_bytes + t.bytes
      from (select key_id, sum(bytes) as bytes, min(quota) as quota from input group by key_id) t
     where k.id = t.key_id and k.stored_bytes + t.bytes <= t.quota
    returning k.id
  ),
  submission as (
    insert into submissions (${SUBMISSION_COLUMNS})
    select i.id, i.key_id, i.email, i.message, i.subject, i.custom_fields, i.email_status, i.client_ip, i.origin
      from input i join charged c on c.id = i.key_id
     order by i.n
    returning id
  ),
  attachment as (
    insert into attachments (id, submission_id, field_name, filename, content_type, size, storage_key, sha256, created_at)
    select gen_random_uuid(), s.id, f.field_name, f.filename, f.content_type, f.size, f.storage_key, f.sha256, clock_timestamp()
      from input i
      join submission s on s.id = i.id,
           rows from (jsonb_to_recordset(i.files)
             as (field_name text, filename text, content_type text, size bigint, storage_key text, sha256 text))
           with ordinality as f(field_name, filename, content_type, size, storage_key, sha256, position)
     order by i.n, f.position
  )
  select id from submission`;

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
 * Inserts the row, its attachments and its webhook deliveries. With `charge`, the same statement
 * charges the files' bytes and inserts nothing when that would pass the quota: false then.
 */
async function insertSubmission(
  em: EntityManager,
  submission: NewSubmission,
  emailStatus: EmailStatus,
  webhookDeliveryIds: string[],
  charge = false,
): Promise<boolean> {
  const values = submissionRow(submission, emailStatus);
  if (submission.files.length === 0 && webhookDeliveryIds.length === 0) {
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
     )${webhookDeliveryIds.length ? WEBHOOK_ROWS : ''}
     insert into attachments (id, submission_id, field_name, filename, content_type, size, storage_key, sha256, created_at)
     select gen_random_uuid(), submission.id, f.field_name, f.filename, f.content_type, f.size, f.storage_key, f.sha256,
            clock_timestamp() -- increases row by row, so the files keep their order
       from submission,
            rows from (jsonb_to_recordset(?::jsonb)
              as (field_name text, filename text, content_type text, size bigint, storage_key text, sha256 text))
            with ordinality as f(field_name, filename, content_type, size, storage_key, sha256, position)
      order by f.position
     returning 1`,
    [
      ...(charge ? chargeValues(submission) : []),
      ...values,
      // Array literals: the driver would spread a JS array into a list.
      ...(webhookDeliveryIds.length ? [`{${webhookDeliveryIds.join(',')}}`, `{${submission.key.webhookEndpointIds.join(',')}}`] : []),
      JSON.stringify(files),
    ],
  );
  // With `charge`, the attachments' `returning 1` says whether the charge (and so the insert) happened.
  return !charge || inserted.length > 0;
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

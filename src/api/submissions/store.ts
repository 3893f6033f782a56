// Saving an accepted submission: the row, its attachments and its webhook deliveries in one statement (so one
// implicit transaction and one round trip: this runs on every submission, see npm run bench).
// With files, the key's storage quota is charged in the same transaction.
// An error answer means nothing was stored: when a write's answer is lost (a timeout, a broken
// connection), its outcome is learnt from PostgreSQL before the request is answered (settle below).
import type { EntityManager } from '@mikro-orm/postgresql';
import type pg from 'pg';
import type { EmailStatus } from '../../shared/deliveries/delivery-columns.ts';
import type { ActiveKey } from '../../shared/keys/keys.ts';
import type { GroupCommit } from '../../shared/infra/group-commit.ts';
import { inTransaction } from '../../shared/infra/db/transactions.ts';
import {
  beginSubmissionWrite,
  defaultSubject,
  insertSubmissionRows,
  insertSubmissionWithFiles,
  insertSubmissionWithFilesCommitted,
  readEmailStatus,
  settledSubmission,
  submissionRow as newRow,
  takeIdempotencyKey,
  type NewWebhookDelivery,
  type SubmissionRow,
} from '../../shared/submissions/submissions.ts';
import { ApiError, errors } from '../api-errors.ts';
import { API_PG_WAITS } from '../unavailable.ts';
import { createdEventId } from '../../shared/webhooks/created-event-id.ts';
import type { Admission } from './admit.ts';
import type { SubmissionInput } from './input.ts';
import { IdempotencyKeyTaken } from './idempotency.ts';

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
  /** The email's fate (src/api/submissions/admit.ts): known already, or decided by writes in the transaction that saves the row. */
  admit: { known: Admission } | { run: (tx: EntityManager) => Promise<Admission> };
  /**
   * Where the common case's row goes (no files, no admission writes): a group commit of
   * `insertSubmissionBatch`, so that concurrent requests share one INSERT. Without it, the row is
   * inserted alone.
   */
  insertRow?: GroupCommit<SubmissionRow>;
  /** Where a submission with files is written (saveWithFiles); without it, in a transaction of the ORM. */
  filesPool?: pg.Pool;
  /** The client's Idempotency-Key and its request's fingerprint: taken in the transaction that stores the row, or IdempotencyKeyTaken. */
  idempotency?: { key: string; fingerprint: string } | undefined;
};

/**
 * `webhookDeliveries`: the key's webhook deliveries, written with the row and enqueued after the
 * commit as one plain job each. Always written here, whatever the email's fate: the previous
 * release's workers deliver a webhook only from its row, and an API writes only what the workers
 * of the release before it handle (docs/upgrading.md#releases-side-by-side). This release's
 * workers also write a missing row themselves (its id is createdEventId), so that a later API may
 * leave them the rows.
 */
export type SavedSubmission = { id: string; emailStatus: EmailStatus; confirmEmailId?: string; webhookDeliveries: NewWebhookDelivery[] };

/**
 * Admits and saves. For a confirmed mailbox this is one statement (with files, the quota charge
 * included), and without files it joins the group commit, webhook deliveries and all; admission
 * writes (an unconfirmed mailbox) make it one transaction. Either way a refusal (quota, consent) leaves no row, no charge
 * and no email behind.
 */
/** `em`: the request's EntityManager, asked for only when the row does not join the group commit. */
export async function saveSubmission(em: () => EntityManager, submission: NewSubmission): Promise<SavedSubmission> {
  const webhookDeliveries = submission.key.webhookEndpointIds.map((endpointId) => ({ id: createdEventId(submission.id, endpointId), endpointId }));
  const saved = (admission: Admission): SavedSubmission => ({
    id: submission.id,
    emailStatus: admission.emailStatus,
    confirmEmailId: admission.confirmEmailId,
    webhookDeliveries,
  });
  const { admit, idempotency } = submission;
  if (idempotency) {
    // One transaction: the row, then the key, whose conflict with an earlier request's rolls the row back.
    let admission: Admission | undefined;
    await settledTransaction(em(), submission.id, async (tx) => {
      admission = 'run' in admit ? await admit.run(tx) : admit.known;
      await insertSubmission(tx, submissionRow(submission, admission.emailStatus, webhookDeliveries), submission);
      const earlier = await takeIdempotencyKey(tx, {
        keyId: submission.key.id,
        idempotencyKey: idempotency.key,
        fingerprint: idempotency.fingerprint,
        submissionId: submission.id,
      });
      if (earlier) throw new IdempotencyKeyTaken(earlier);
    });
    return saved(admission!);
  }
  if ('run' in admit) {
    let admission: Admission | undefined;
    await settledTransaction(em(), submission.id, async (tx) => {
      admission = await admit.run(tx);
      await insertSubmission(tx, submissionRow(submission, admission.emailStatus, webhookDeliveries), submission);
    });
    // Committed, so the admission ran in it; and a refusal (quota, consent) would have rolled it back.
    return saved(admission!);
  }
  const admission = admit.known;
  const row = submissionRow(submission, admission.emailStatus, webhookDeliveries);
  if (submission.files.length > 0) {
    // One statement charges the quota and inserts; with the pool, its COMMIT goes with it, so the
    // key row's lock lasts only while PostgreSQL runs them.
    if (submission.filesPool) await saveWithFiles(submission.filesPool, em, row, submission);
    else await settledTransaction(em(), submission.id, (tx) => insertSubmission(tx, row, submission));
    return saved(admission);
  }
  try {
    await (submission.insertRow ? submission.insertRow(row) : writeSubmissionRows((rows) => insertSubmissionRows(em(), rows))([row]));
  } catch (error) {
    if (!mayBeWritten.has(row) && !outcomeUnknown(error)) throw error;
    // The INSERT is idempotent: repeated, it either finds the row or writes it, waiting on the primary
    // key for a first write still under way. Only its success settles the outcome. A repeat that
    // fails, at PostgreSQL's statement limit (57014) above all, tells nothing of the first write:
    // that limit counts from when PostgreSQL began a statement, not from when it was sent (a stalled
    // or busy server begins it late), and not through its COMMIT; so the first may commit after a
    // repeat gave up, and a missing row is no answer. settle tries again.
    await settle(submission.id, error, async () => {
      await insertSubmissionRows(em(), [row]);
      return true;
    });
  }
  return saved(admission);
}

/**
 * The write of the group commit (and of a lone row), by `write`. A row whose write was cut off before
 * its answer came is remembered: the group commit retries it alone, and should that retry fail before
 * it reached PostgreSQL (a refused connection), its outcome is still the cut-off write's.
 */
export function writeSubmissionRows(write: (rows: SubmissionRow[]) => Promise<void>): (rows: SubmissionRow[]) => Promise<void> {
  return async (rows) => {
    try {
      await write(rows);
    } catch (error) {
      if (outcomeUnknown(error)) for (const row of rows) mayBeWritten.add(row);
      throw error;
    }
  };
}

const mayBeWritten = new WeakSet<SubmissionRow>();

/**
 * PostgreSQL ends a submission's statements after this, before the API itself stops waiting
 * (API_PG_WAITS.queryMs): a slow write is then rolled back and answered 503, not left running.
 */
export const SUBMISSION_STATEMENT_TIMEOUT_MS = API_PG_WAITS.queryMs - 1_000;
/** How long a request whose write was cut off keeps asking PostgreSQL what became of it: through a restart. */
export const SETTLE_MS = 30_000;
const SETTLE_PAUSE_MS = 500;

/**
 * A write whose outcome PostgreSQL could not be asked about within SETTLE_MS: the request gets no
 * answer at all (its connection is closed), since neither "stored" nor "not stored" is known.
 */
export class WriteOutcomeUnknown extends Error {
  override name = 'WriteOutcomeUnknown';
  constructor(submissionId: string, cause: unknown) {
    super(`the outcome of the write of submission ${submissionId} is unknown`, { cause });
  }
}

/**
 * Runs `work` in a transaction PostgreSQL bounds (SUBMISSION_STATEMENT_TIMEOUT_MS). When the
 * COMMIT's answer is lost, the submission's row decides, read once no write of it can still be under
 * way (settledSubmission): there, it was stored; missing, nothing was (rolled back, or refused by
 * the quota in a committed statement), and the request gets a 503. PostgreSQL's own record of the
 * transaction is not asked: after a crash it may give a lost transaction's id to a new one.
 */
async function settledTransaction(em: EntityManager, submissionId: string, work: (tx: EntityManager) => Promise<void>): Promise<void> {
  // An object: TypeScript does not follow assignments made in the callback.
  const progress = { committing: false };
  try {
    await inTransaction(em, async (tx) => {
      await beginSubmissionWrite(tx, submissionId, SUBMISSION_STATEMENT_TIMEOUT_MS);
      await work(tx);
      progress.committing = true;
    });
  } catch (error) {
    // PostgreSQL's own timeout (57014, query_canceled) rolled it back: nothing was stored.
    if (sqlState(error) === '57014') throw errors.serviceUnavailable();
    // Only the COMMIT's lost answer leaves the outcome open: before it, nothing can have committed.
    if (!progress.committing || !outcomeUnknown(error)) throw error;
    const stored = await settle(submissionId, error, () => settledSubmission(em.fork(), submissionId, SUBMISSION_STATEMENT_TIMEOUT_MS));
    if (!stored) throw errors.serviceUnavailable();
  }
}

/**
 * A submission with files, written as settledTransaction writes it (bounded, under the submission's
 * write lock, its outcome settled by that lock when the last answer is lost), in two round trips on
 * a connection of `pool`: the call and its COMMIT go together, so the key's row, locked by the quota
 * charge, is not held while a COMMIT is on its way (insertSubmissionWithFilesCommitted).
 */
async function saveWithFiles(pool: pg.Pool, em: () => EntityManager, row: SubmissionRow, submission: NewSubmission): Promise<void> {
  const progress = { locked: false };
  let broken: Error | undefined;
  let saved: boolean;
  const client = await pool.connect();
  try {
    saved = await insertSubmissionWithFilesCommitted(client, row, chargedFiles(submission), {
      timeoutMs: SUBMISSION_STATEMENT_TIMEOUT_MS,
      locked: () => (progress.locked = true),
    });
  } catch (error) {
    // Not an answer from PostgreSQL: the connection is not reused.
    if (sqlState(error) === undefined) broken = error instanceof Error ? error : new Error(String(error));
    // PostgreSQL's own timeout (57014, query_canceled) rolled it back: nothing was stored.
    if (sqlState(error) === '57014') throw errors.serviceUnavailable();
    // Only the last message's lost answer leaves the outcome open: before it, nothing can have committed.
    if (!progress.locked || !outcomeUnknown(error)) throw error;
    const stored = await settle(submission.id, error, () => settledSubmission(em().fork(), submission.id, SUBMISSION_STATEMENT_TIMEOUT_MS));
    if (!stored) throw errors.serviceUnavailable();
    return;
  } finally {
    client.release(broken);
  }
  if (!saved) throw errors.storageQuota(submission.storageQuotaMb);
}

/**
 * Asks `check` until it knows (not undefined), pausing between tries, for up to SETTLE_MS; then
 * gives up with WriteOutcomeUnknown. Errors of `check` (PostgreSQL still down) are tries too.
 */
async function settle<T>(submissionId: string, cause: unknown, check: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + SETTLE_MS;
  for (;;) {
    const known = await check().catch(() => undefined);
    if (known !== undefined) return known;
    if (Date.now() + SETTLE_PAUSE_MS > deadline) throw new WriteOutcomeUnknown(submissionId, cause);
    await new Promise((resolve) => setTimeout(resolve, SETTLE_PAUSE_MS));
  }
}

/** Errors that prove the statement never reached PostgreSQL: no connection could be had. */
const NOT_CONNECTED_CODES = new Set(['ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'EAI_AGAIN', '57P03']);
/** node-postgres's words for a statement whose answer never came: cut off, or waited for too long. */
const ANSWER_LOST = /^Connection terminated|^Client has encountered a connection error|^Query read timeout/;

/**
 * Whether a failed write may still have committed: its statement may have reached PostgreSQL and the
 * answer was lost. An error PostgreSQL answered (a SQLSTATE outside class 08) means the statement
 * failed and its transaction with it; a connection never made means it was never sent.
 */
export function outcomeUnknown(error: unknown): boolean {
  let current: unknown = error;
  // MikroORM's DriverException wraps the pg error; look a few causes deep, no further.
  for (let depth = 0; depth < 4 && current instanceof Error; depth++, current = current.cause) {
    if (current instanceof ApiError) return false;
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') {
      if (NOT_CONNECTED_CODES.has(code)) return false;
      if (['ECONNRESET', 'EPIPE', 'ETIMEDOUT'].includes(code) || code.startsWith('08')) return true;
      if (/^[0-9A-Z]{5}$/.test(code)) return false;
    }
    if (ANSWER_LOST.test(current.message)) return true;
  }
  return false;
}

function sqlState(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current instanceof Error; depth++, current = current.cause) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) return code;
  }
  return undefined;
}

function submissionRow(submission: NewSubmission, emailStatus: EmailStatus, webhookDeliveries: NewWebhookDelivery[]): SubmissionRow {
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
    webhookDeliveries,
  });
}

/**
 * Inserts the row, its attachments and its webhook deliveries. With files, the same statement
 * charges their bytes to the key and inserts nothing when that would pass the quota (413).
 */
async function insertSubmission(em: EntityManager, values: SubmissionRow, submission: NewSubmission): Promise<void> {
  if (submission.files.length === 0) {
    // A plain INSERT (with the webhook deliveries, a CTE of two): the PL/pgSQL function below
    // costs more per row, which only the files' statements repay (docs/benchmarks.md).
    await insertSubmissionRows(em, [values]);
    return;
  }
  const saved = await insertSubmissionWithFiles(em, values, chargedFiles(submission));
  if (!saved) throw errors.storageQuota(submission.storageQuotaMb);
}

/** The files' rows, and their bytes charged to the key's quota. */
function chargedFiles(submission: NewSubmission) {
  const files = submission.files.map((file) => ({
    field_name: file.fieldName,
    filename: file.filename,
    content_type: file.contentType,
    size: file.size,
    storage_key: file.storageKey,
    sha256: file.sha256,
  }));
  return {
    charge: { bytes: submission.files.reduce((total, file) => total + file.size, 0), quotaBytes: submission.storageQuotaMb * 1024 * 1024 },
    files,
  };
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

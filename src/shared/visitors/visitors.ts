// A visitor's data on request (GDPR Art. 15 access, Art. 17 erasure; docs/operations.md): everything
// stored about one email address across all keys, exported as one JSON document or erased. The
// address is matched as the submitter of a submission (its `email` column, not the text of
// messages: those may be other people's messages that mention it), as the addressee of the
// service's emails (autoresponses, copies to added recipients, confirmation requests), as an added
// recipient of a form, and in the bounce, complaint and consent records. An owner's account (the
// keys the address owns) is not a visitor's data: the erasure leaves it, and says so.
import { once } from 'node:events';
import type { Writable } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Storage } from '../infra/storage.ts';
import { mailboxOf } from '../keys/consent.ts';
import { KEY_EMAIL_KINDS } from '../keys/entities.ts';
import { normaliseEmail } from '../keys/keys.ts';
import { deleteSubmissions } from '../submissions/submissions.ts';
import { countKeysOwned, readAddressRecords } from './data/address-records.ts';
import {
  deleteAutoresponsesTo,
  deleteCopiesTo,
  deleteKeyEmailsTo,
  deleteMailboxConsent,
  deleteRecipientEntriesOf,
  keepAutoresponsesErased,
  keepKeyEmailsErased,
  keepSuppressionErased,
  type ErasedAddress,
} from './data/address-erasure.ts';
import {
  deleteCampaignVotesOf,
  findJobRowsOf,
  findSubmissionIdsOfPage,
  readAttachmentRecords,
  readAttemptRecords,
  readCampaignVoteRecords,
  readIdempotencyRecords,
  readSubmissionRecords,
  readWebhookRecords,
  type RelatedRecord,
} from './data/visitor-submissions.ts';
import { findJobs, jobIdsOf, removeJobs, type VisitorQueues } from './visitor-jobs.ts';

export type VisitorDeps = {
  em: EntityManager;
  storage: Storage;
  /** The queues whose jobs name delivery rows: the deliveries' and the webhooks'. */
  queues: VisitorQueues;
  /** src/shared/infra/secrets.ts createErasedForm under the installation's SECRET. */
  erasedForm: (value: string) => string;
};

export const VISITOR_EXPORT_FORMAT = 'contact-form-service visitor export 1';

/** Submissions read (with their files) or deleted at a time: an erasure of 100,000 rows is 200 short transactions, never one long one. */
const SUBMISSION_BATCH = 500;
const EXPORT_BATCH = 50;
/** Other rows deleted at a time. */
const ROW_BATCH = 500;
/** Rows of the submissions table read at a time to find the address's (src/shared/visitors/data/visitor-submissions.ts). */
const SCAN_PAGE = 10_000;

/** Every submission id of the address, in id order, read page by page. */
async function submissionIdsOf(em: EntityManager, address: string): Promise<string[]> {
  const ids: string[] = [];
  let after: string | undefined;
  do {
    const page = await findSubmissionIdsOfPage(em, address, after, SCAN_PAGE);
    ids.push(...page.ids);
    after = page.last;
  } while (after !== undefined);
  return ids;
}

/**
 * Writes the address's data to `out` as one JSON document (VISITOR_EXPORT_FORMAT): its submissions,
 * each with its files (base64), delivery attempts and webhook deliveries, then the records under
 * the address, and the queued jobs that name any of those rows. Streams: one batch of submissions
 * (and one file) in memory at a time. Does not end `out`.
 */
export async function exportVisitor(deps: VisitorDeps, input: string, out: Writable): Promise<{ submissions: number; files: number; jobs: number }> {
  const address = normaliseEmail(input);
  const mailbox = mailboxOf(address);
  const write = async (text: string) => {
    if (!out.write(text)) await once(out, 'drain');
  };
  const head = { format: VISITOR_EXPORT_FORMAT, address, exported_at: new Date().toISOString() };
  await write(`${JSON.stringify(head).slice(0, -1)},"submissions":[`);
  const ids = await submissionIdsOf(deps.em, address);
  const jobIds: string[] = [];
  let files = 0;
  for (let start = 0; start < ids.length; start += EXPORT_BATCH) {
    const batch = ids.slice(start, start + EXPORT_BATCH);
    const [records, attachments, attempts, webhooks, idempotency, votes, related] = [
      await readSubmissionRecords(deps.em, batch),
      await readAttachmentRecords(deps.em, batch),
      await readAttemptRecords(deps.em, batch),
      await readWebhookRecords(deps.em, batch),
      await readIdempotencyRecords(deps.em, batch),
      await readCampaignVoteRecords(deps.em, batch),
      await findJobRowsOf(deps.em, batch),
    ];
    jobIds.push(...jobIdsOf([...batch, ...related.rowIds], related.endpoints));
    for (const [index, submission] of records.entries()) {
      const of = (list: RelatedRecord[]) => list.filter((item) => item.submission_id === submission.id).map((item) => item.record);
      const withContent = [];
      for (const file of of(attachments)) withContent.push({ ...file, content_base64: await readFile(deps.storage, String(file.storage_key)) });
      files += withContent.length;
      const entry = {
        ...submission.record,
        files: withContent,
        delivery_attempts: of(attempts),
        webhook_deliveries: of(webhooks),
        idempotency_keys: of(idempotency),
        spam_votes: of(votes),
      };
      await write(`${start + index > 0 ? ',' : ''}\n${JSON.stringify(entry)}`);
    }
  }
  const records = await readAddressRecords(deps.em, address, mailbox);
  const idsOf = (rows: Array<Record<string, unknown>>) => rows.map((row) => String(row.id));
  jobIds.push(...idsOf(records.autoresponses), ...idsOf(records.copies_received), ...idsOf(records.key_emails));
  const jobs = await findJobs(deps.queues, jobIds);
  const keysOwned = await countKeysOwned(deps.em, address, mailbox);
  await write(`],${JSON.stringify({ ...records, queued_jobs: jobs, keys_owned: keysOwned }).slice(1)}\n`);
  return { submissions: ids.length, files, jobs: jobs.length };
}

/** A stored file's bytes as base64; null when the object is missing from the bucket. */
async function readFile(storage: VisitorDeps['storage'], key: string): Promise<string | null> {
  try {
    const chunks: Buffer[] = [];
    for await (const chunk of await storage.download(key)) chunks.push(chunk as Buffer);
    return Buffer.concat(chunks).toString('base64');
  } catch (error) {
    if ((error as { name?: string }).name === 'NoSuchKey') return null;
    throw error;
  }
}

export type ErasureSummary = {
  address: string;
  submissions: number;
  autoresponses_deleted: number;
  autoresponses_kept_erased: number;
  copies_deleted: number;
  recipient_entries_deleted: number;
  key_emails_deleted: number;
  key_emails_kept_erased: number;
  bounces_kept_erased: number;
  complaints_kept_erased: number;
  consent_rows_deleted: number;
  jobs_removed: number;
  /** Jobs a worker held at that moment: they find their rows gone and end. */
  jobs_busy: number;
  /** Keys the address owns: an owner's account, left as it is (with its suppression and consent records). */
  keys_owned: number;
};

export type ErasureProgress = { step: string; done: number; total?: number };

/**
 * Deletes the address's data, in batches (each batch of submissions: files, then rows, then their
 * jobs), and keeps what must hold after it under the address's erased form: its suppression, and
 * the autoresponses and confirmation requests of the last 24 hours that the bounds count. Run
 * again, it finds what an interrupted run left.
 */
export async function eraseVisitor(deps: VisitorDeps, input: string, progress?: (step: ErasureProgress) => void): Promise<ErasureSummary> {
  const { em } = deps;
  const address = normaliseEmail(input);
  const mailbox = mailboxOf(address);
  const who: ErasedAddress = { address, mailbox, erasedAddress: deps.erasedForm(address), erasedMailbox: deps.erasedForm(mailbox) };
  const keysOwned = await countKeysOwned(em, address, mailbox);
  const summary: ErasureSummary = {
    address,
    submissions: 0,
    autoresponses_deleted: 0,
    autoresponses_kept_erased: 0,
    copies_deleted: 0,
    recipient_entries_deleted: 0,
    key_emails_deleted: 0,
    key_emails_kept_erased: 0,
    bounces_kept_erased: 0,
    complaints_kept_erased: 0,
    consent_rows_deleted: 0,
    jobs_removed: 0,
    jobs_busy: 0,
    keys_owned: keysOwned,
  };
  const dropJobs = async (ids: string[]) => {
    const result = await removeJobs(deps.queues, ids);
    summary.jobs_removed += result.removed;
    summary.jobs_busy += result.busy;
  };

  const ids = await submissionIdsOf(em, address);
  for (let start = 0; start < ids.length; start += SUBMISSION_BATCH) {
    const batch = ids.slice(start, start + SUBMISSION_BATCH);
    const related = await findJobRowsOf(em, batch);
    await deleteCampaignVotesOf(em, batch);
    // Files first, then the rows (attachments, attempts, webhook deliveries, copies, idempotency records cascade).
    await deleteSubmissions(em, deps.storage, batch);
    // After the rows: a job that starts in between finds nothing to send.
    await dropJobs(jobIdsOf([...batch, ...related.rowIds], related.endpoints));
    summary.submissions += batch.length;
    progress?.({ step: 'submissions', done: summary.submissions, total: ids.length });
  }

  summary.autoresponses_deleted = await inBatches((limit) => deleteAutoresponsesTo(em, who, limit), dropJobs);
  // A settled row's job is normally gone already; one left over would name a row that no longer holds the address.
  const keptAutoresponses = await keepAutoresponsesErased(em, who);
  await dropJobs(keptAutoresponses);
  summary.autoresponses_kept_erased = keptAutoresponses.length;
  progress?.({ step: 'autoresponses', done: summary.autoresponses_deleted + summary.autoresponses_kept_erased });

  summary.copies_deleted = await inBatches((limit) => deleteCopiesTo(em, address, limit), dropJobs);
  summary.recipient_entries_deleted = await deleteRecipientEntriesOf(em, address);
  progress?.({ step: 'added recipient', done: summary.copies_deleted + summary.recipient_entries_deleted });

  // An owner's own key emails (new key, sign-in links) belong to their account; the requests to confirm as an added recipient do not.
  const kinds = keysOwned ? ['recipient-confirm'] : KEY_EMAIL_KINDS;
  summary.key_emails_deleted = await inBatches((limit) => deleteKeyEmailsTo(em, address, kinds, limit), dropJobs);
  const keptEmails = await keepKeyEmailsErased(em, who, kinds);
  await dropJobs(keptEmails);
  summary.key_emails_kept_erased = keptEmails.length;
  progress?.({ step: 'emails', done: summary.key_emails_deleted + summary.key_emails_kept_erased });

  // An owner's mail is suppressed and consented by the plain address: those stay with the account.
  if (!keysOwned) {
    const suppression = await keepSuppressionErased(em, who);
    summary.bounces_kept_erased = suppression.bounces;
    summary.complaints_kept_erased = suppression.complaints;
    summary.consent_rows_deleted = await deleteMailboxConsent(em, mailbox);
    progress?.({ step: 'suppression and consent', done: suppression.bounces + suppression.complaints + summary.consent_rows_deleted });
  }
  return summary;
}

/** Runs `step` until it deletes nothing, handing each batch's ids to `after`; how many in all. */
async function inBatches(step: (limit: number) => Promise<string[]>, after: (ids: string[]) => Promise<void>): Promise<number> {
  let total = 0;
  for (;;) {
    const ids = await step(ROW_BATCH);
    if (!ids.length) return total;
    await after(ids);
    total += ids.length;
  }
}

// The owner console's operations, shared by its pages and its JSON API: each takes the session's
// address and answers undefined for anything that is not that address's (the routes make it a 404).
import type { Context } from 'koa';
import type { Attachment, Submission } from '../../shared/submissions/entities.ts';
import type { VerificationKey } from '../../shared/keys/entities.ts';
import type { EmailStatus } from '../../shared/deliveries/delivery-columns.ts';
import { keyRecord, listKeys, parseDomains } from '../../shared/keys/keys.ts';
import type { KeySettingsChanges } from '../../shared/autoresponses/autoresponse-settings.ts';
import {
  decodeCursor,
  deleteSubmissions,
  deliveryHistories,
  listSubmissions,
  ownerDeliveryFields,
  submissionFields,
  filesOfSubmissions,
  submissionFiles,
  ownerReply,
  type DeliveryHistory,
  type TextPreview,
  loadSubmissionKey,
  reloadSubmission,
} from '../../shared/submissions/submissions.ts';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AppContext, AppDeps } from '../context.ts';
import { enqueueCommitted } from '../submissions/enqueue.ts';
import { errors } from '../api-errors.ts';
import { fileHandling, scanRecord } from '../../shared/files/files.ts';
import { submissionsCsv } from '../submissions/submissions-csv.ts';
import { mailboxOf } from '../../shared/keys/consent.ts';
import { isConfirmed } from '../../shared/keys/keys.ts';
import { changeKey, confirmMailboxOf } from '../keys/key-changes.ts';
import { heldCount } from '../../shared/owners/owners.ts';
import { lastMessageTimes, overviewOf } from '../../shared/owners/overview.ts';
import { submissionJob } from '../../shared/deliveries/delivery-jobs.ts';
import { ownedFile, ownedKey, ownedSubmission, UUID } from './access.ts';
import { takeExport, takeSearch } from '../heavy-reads.ts';
import { resendCopy, resendSubmission } from '../submissions/resend.ts';
import { copiesOfSubmissions, recipientsOfKeys, type CopyRecord, type RecipientRecord, type RecipientsEdit } from '../../shared/recipients/recipients.ts';
import { NO_FILTERS, pageQueryOf, type ListFilters } from './filters.ts';
import { webhookOutcomes } from './webhook-outcomes.ts';

export const PAGE_SIZE = 25;
/**
 * What a list shows of each message: its first 1,000 characters (and each field's first 500,
 * FIELD_PREVIEW_CHARS). A page of the largest messages is then about 100 KB, not 90 MB, and a
 * search costs the service little.
 */
export const LIST_PREVIEW = { messageChars: 1_000 };
export const MAX_PAGE_SIZE = 100;

export const ownerKeyRecord = (key: VerificationKey, deps: Pick<AppDeps, 'vault'>) => ({ id: key.id, ...keyRecord(key, deps.vault) });

/** Key records with their added recipients (one query for all of them), as the key list and the key's PATCH answer them. */
export async function withRecipients<K extends { id: string }>(em: EntityManager, keys: K[]): Promise<Array<K & { recipients: RecipientRecord[] }>> {
  const recipients = await recipientsOfKeys(
    em,
    keys.map((key) => key.id),
  );
  return keys.map((key) => ({ ...key, recipients: recipients.get(key.id) ?? [] }));
}

/**
 * `page`: what a list loaded for all its rows at once (their histories, files and copies), and its cut texts
 * (LIST_PREVIEW) in place of the row's own; `truncated` says whether anything was cut, so that a
 * client knows to read the whole message at /submissions/:id. Without `page`, all is read here.
 */
export async function ownerSubmissionRecord(
  em: EntityManager,
  submission: Submission,
  page?: { history: DeliveryHistory; files: Attachment[]; copies: CopyRecord[]; preview?: TextPreview },
) {
  const files = page?.files ?? (await submissionFiles(em, submission));
  const history = page?.history ?? (await deliveryHistories(em, [submission.id])).get(submission.id);
  const copies = page?.copies ?? (await copiesOfSubmissions(em, [submission.id])).get(submission.id) ?? [];
  return {
    ...ownerDeliveryFields(submissionFields(submission, history, page?.preview)),
    copies: copies.map((copy) => ({ ...copy, last_error: ownerReply(copy.last_error) })),
    truncated: page?.preview?.truncated ?? false,
    /** A test message the owner sent from the console (./test-message.ts). */
    test: submission.test,
    key_id: submission.key.id,
    attachments: files.map((file) => ({
      id: file.id,
      filename: file.filename,
      size: file.size,
      content_type: file.contentType,
      // A withheld (infected) file has no download: it was removed or is in quarantine.
      download: fileHandling(file) === 'withhold' ? null : `/owner/submissions/${submission.id}/files/${file.id}`,
      scan: scanRecord(file),
    })),
  };
}
export type OwnerSubmissionRecord = Awaited<ReturnType<typeof ownerSubmissionRecord>>;

export const notFound = () => errors.notFound('Not found.');

export async function listOwnerKeys(em: EntityManager, deps: AppDeps, email: string) {
  const keys = await listKeys(em, email);
  return withRecipients(
    em,
    keys.map((key) => ownerKeyRecord(key, deps)),
  );
}

/** A key's settings as its owner changes them: the admin API's but the operator's review, the domains as given (read here), and the added recipients. */
export type OwnerKeyChanges = Omit<KeySettingsChanges, 'domains' | 'autoresponseReview'> & {
  domains?: unknown[];
  /** The added recipients (src/shared/recipients): the whole list, or a change of it; left out: kept as they are. */
  recipients?: RecipientsEdit;
};

/** Changes a key of the owner (state, domains, captcha, added recipients…) under the same rules as the admin API. */
export async function changeOwnerKey(ctx: AppContext, deps: AppDeps, email: string, keyId: string, changes: OwnerKeyChanges) {
  const em = ctx.state.em;
  const key = await ownedKey(em, email, keyId);
  if (!key) return undefined;
  const updated = await changeKey(
    ctx,
    deps,
    key.keyHash,
    {
      status: changes.status,
      useDomain: changes.useDomain,
      domains: changes.domains === undefined ? undefined : parseDomains(changes.domains),
      captcha: changes.captcha,
      spamFilter: changes.spamFilter,
      spamToWebhooks: changes.spamToWebhooks,
      label: changes.label,
      subjectPrefix: changes.subjectPrefix,
      autoresponse: changes.autoresponse,
      emailSubject: changes.emailSubject,
      emailFieldOrder: changes.emailFieldOrder,
      emailHiddenFields: changes.emailHiddenFields,
      emailFiles: changes.emailFiles,
    },
    changes.recipients,
  );
  const [record] = await withRecipients(em, [ownerKeyRecord(updated, deps)]);
  return record!;
}

/** A page of the key's submissions, newest first, that pass the filters; `status`: only those (the Spam view: `spam`). */
export async function ownerSubmissionsPage(
  em: EntityManager,
  deps: AppDeps,
  email: string,
  keyId: string,
  options: { cursor?: string; limit?: number; status?: EmailStatus; filters?: ListFilters; sessionId: string },
) {
  const key = await ownedKey(em, email, keyId);
  if (!key) return undefined;
  const after = options.cursor ? decodeCursor(options.cursor) : undefined;
  if (options.cursor && !after) throw errors.invalidFields({ cursor: ['Not a cursor of this list.'] });
  const filters = pageQueryOf(options.filters ?? NO_FILTERS);
  const query = { ...filters, keyHash: key.keyHash, limit: options.limit ?? PAGE_SIZE, status: options.status ?? filters.status };
  // A search is the list's costly read: 429 past the session's bound on them.
  const release = query.search ? takeSearch(deps, options.sessionId) : () => undefined;
  let listed: Awaited<ReturnType<typeof listSubmissions>>;
  try {
    listed = await listSubmissions(em, query, after, LIST_PREVIEW);
  } finally {
    release();
  }
  const { page, nextCursor, previews } = listed;
  const histories = await deliveryHistories(
    em,
    page.map((row) => row.id),
  );
  const files = await filesOfSubmissions(em, page);
  const copies = await copiesOfSubmissions(
    em,
    page.map((row) => row.id),
  );
  const submissions = [];
  for (const row of page) {
    const loaded = {
      history: histories.get(row.id) ?? { attempts: [], total: 0 },
      files: files.get(row.id) ?? [],
      copies: copies.get(row.id) ?? [],
      preview: previews?.get(row.id),
    };
    submissions.push(await ownerSubmissionRecord(em, row, loaded));
  }
  return { key: ownerKeyRecord(key, deps), submissions, next_cursor: nextCursor };
}

/** One submission, with the outcome of each of its chat and webhook deliveries. */
export async function getOwnerSubmission(em: EntityManager, deps: AppDeps, email: string, id: string) {
  const submission = await ownedSubmission(em, email, id);
  if (!submission) return undefined;
  return { ...(await ownerSubmissionRecord(em, submission)), webhooks: await webhookOutcomes(em, submission.key.id, submission.id) };
}

/**
 * The overview of one of the address's keys (`keyId`), or of all of them with a line per key;
 * undefined when `keyId` is not the address's.
 */
export async function ownerOverview(em: EntityManager, deps: AppDeps, email: string, keyId?: string) {
  if (keyId !== undefined) {
    const key = await ownedKey(em, email, keyId);
    if (!key) return undefined;
    return { key: ownerKeyRecord(key, deps), keys: [], overview: await overviewOf(em, [key.id]) };
  }
  const keys = await listKeys(em, email);
  const ids = keys.map((key) => key.id);
  const overview = await overviewOf(em, ids);
  const lastAt = await lastMessageTimes(em, ids);
  return {
    key: null,
    keys: keys.map((key) => {
      const counts = overview.perKey.get(key.id);
      return { ...ownerKeyRecord(key, deps), recent: counts?.recent ?? 0, failed: counts?.failed ?? 0, last_at: lastAt.get(key.id) ?? null };
    }),
    overview,
  };
}

/** A message of the owner's with its key, for the message's page. */
export async function ownerSubmissionWithKey(em: EntityManager, deps: AppDeps, email: string, id: string) {
  const submission = await ownedSubmission(em, email, id);
  if (!submission) return undefined;
  await loadSubmissionKey(em, submission);
  const record = await ownerSubmissionRecord(em, submission);
  return { key: ownerKeyRecord(submission.key, deps), submission: { ...record, webhooks: await webhookOutcomes(em, submission.key.id, submission.id) } };
}

/** Re-sends one recipient's failed, bounced or suppressed copy of a message through the queue; 409 for any other. */
export async function resendOwnerCopy(ctx: AppContext, deps: AppDeps, email: string, id: string, copyId: string) {
  const em = ctx.state.em;
  const submission = await ownedSubmission(em, email, id);
  if (!submission || !UUID.test(copyId)) return undefined;
  if (!(await resendCopy(ctx, deps, em, submission, copyId))) return undefined;
  ctx.state.log.info({ submissionId: id, copyId }, "owner re-sent a recipient's copy");
  return ownerSubmissionRecord(em, submission);
}

/** Re-sends a failed, bounced or suppressed email through the queue; 409 for any other. */
export async function resendOwnerSubmission(ctx: AppContext, deps: AppDeps, email: string, id: string) {
  const em = ctx.state.em;
  const submission = await ownedSubmission(em, email, id);
  if (!submission) return undefined;
  await resendSubmission(ctx, deps, em, submission);
  ctx.state.log.info({ submissionId: id }, 'owner re-sent a failed email');
  // As it now stands: queued again, its attempts and report reset.
  await reloadSubmission(em, submission);
  return ownerSubmissionRecord(em, submission);
}

/** Deletes the submission's files and row; returns its key's id, or undefined when not the owner's. */
export async function deleteOwnerSubmission(em: EntityManager, deps: AppDeps, email: string, id: string): Promise<string | undefined> {
  const submission = await ownedSubmission(em, email, id);
  if (!submission) return undefined;
  await deleteSubmissions(em, deps.storage, [id]);
  return submission.key.id;
}

/**
 * Sends a stored file as a download: its stored type, attachment disposition, nosniff and a
 * sandboxing CSP, so nothing uploaded by a form's visitor ever runs in this origin.
 */
export async function sendOwnerFile(ctx: AppContext, deps: AppDeps, email: string, submissionId: string, fileId: string): Promise<boolean> {
  const file = await ownedFile(ctx.state.em, email, submissionId, fileId);
  if (!file) return false;
  // Its object deleted or quarantined: never served, whatever the storage still holds.
  if (fileHandling(file) === 'withhold') throw errors.gone(`This file was withheld: infected (${file.scanDetail ?? 'unnamed signature'}).`);
  const body = await deps.storage.download(file.storageKey);
  ctx.set({ 'Content-Security-Policy': "default-src 'none'; sandbox", 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'private, no-store' });
  ctx.attachment(file.filename, { type: 'attachment' }); // sets a type from the name: the stored one follows
  ctx.set('Content-Type', file.contentType || 'application/octet-stream');
  ctx.body = body;
  ctx.length = file.size;
  return true;
}

/** The key's messages as CSV: those that pass the list's filters, all without any. 429 past the session's or the process's bound on downloads. */
export async function sendOwnerCsv(
  ctx: Context,
  deps: AppDeps,
  session: { id: string; email: string },
  keyId: string,
  filters: ListFilters = NO_FILTERS,
): Promise<boolean> {
  // The CSV streams after the request's handler returns: it reads on a unit of work of its own.
  const em = deps.orm.em.fork();
  const key = await ownedKey(em, session.email, keyId);
  if (!key) return false;
  const release = takeExport(deps, session.id);
  ctx.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': 'private, no-store' });
  ctx.type = 'text/csv; charset=utf-8';
  ctx.attachment('submissions.csv');
  ctx.body = await submissionsCsv(em, key.keyHash, pageQueryOf(filters), release);
  return true;
}

/** Whether the address's mailbox confirmed it wants its messages, and how many wait until it does. */
export async function ownerConsent(em: EntityManager, deps: AppDeps, email: string) {
  return { mailbox_confirmed: await isConfirmed(em, mailboxOf(email)), held: await heldCount(em, email) };
}

const ENQUEUE_IN_REQUEST = 200;

/**
 * Recipient consent from the console: the owner signed in through a link emailed to this address,
 * the same proof as the confirm link of the key emails. Confirms the mailbox and releases its held
 * messages (a bounded first part enqueued here; the reconciler enqueues the rest).
 */
export async function confirmOwnerMailbox(ctx: AppContext, deps: AppDeps, email: string): Promise<number> {
  const released = await confirmMailboxOf(deps, ctx.state.em, mailboxOf(email));
  for (const id of released.slice(0, ENQUEUE_IN_REQUEST)) await enqueueCommitted(ctx, deps, submissionJob(id, ctx.state.requestId));
  ctx.state.log.info({ released: released.length }, 'owner confirmed the mailbox');
  return released.length;
}

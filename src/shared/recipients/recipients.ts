// More recipients per key: up to MAX_ADDED_RECIPIENTS addresses besides the key's own receive a
// copy of each of its messages. Anyone can hold a key, so an added address is a stranger until it
// says otherwise: it receives nothing but one request to confirm, bounded per address
// (CONFIRM_REQUESTS_PER_KEY and CONFIRM_REQUESTS_PER_MAILBOX a day, within the hourly
// KEY_EMAILS_PER_HOUR of every key email, and none once it reported this service's mail as spam),
// until it confirms through the link of that request. Its consent is for this key only: a mailbox
// that confirmed for its own keys has not agreed to another owner's messages.
//
// The copies: once the owner's email has passed the spam check, the worker makes one row per added
// recipient (kind `recipient-copy`), `queued` for a confirmed one and `held` for one that has not
// confirmed yet. Held copies go out when it confirms, or are deleted after HELD_TTL_DAYS, as the
// key's own held messages are. Each copy is a delivery of its own: its job, status, retries, return
// path and report, so that what happens to one address never changes the owner's email or another
// copy. An added recipient gets the emails only: the key's settings and its console stay with the
// key's own address.
import type { EntityManager } from '@mikro-orm/postgresql';
import * as v from 'valibot';
import { inTransaction } from '../infra/db/transactions.ts';
import { mailboxOf } from '../keys/consent.ts';
import type { KeyStatus } from '../keys/entities.ts';
import {
  checkEmailCap,
  EmailCapError,
  insertRecipientConfirmEmail,
  KeyRuleError,
  lockKeyRow,
  lockMailbox,
  normaliseEmail,
  recipientConfirmsLastDay,
} from '../keys/keys.ts';
import { createCopies, releaseHeldCopies } from '../deliveries/deliveries.ts';
import { QUEUED, RESENDABLE } from '../deliveries/delivery-statuses.ts';
import { deleteRecipient, findRecipientsOfKeys, insertRecipient, recordRecipientConfirmed, type KeyRecipientRow } from './data/key-recipients.ts';
import { findCopiesOf, type CopyRow } from './data/recipient-copies.ts';

/** Addresses a key may have besides its own. */
export const MAX_ADDED_RECIPIENTS = 5;
/** Requests to confirm that one address may get for one key, per 24 hours (removing it and adding it again asks no more often). */
export const CONFIRM_REQUESTS_PER_KEY = 1;
/** Requests to confirm that one mailbox may get for all keys together, per 24 hours: what a stranger's inbox receives at most. */
export const CONFIRM_REQUESTS_PER_MAILBOX = 3;

const Address = v.pipe(v.string(), v.trim(), v.maxLength(254), v.email());

/** The addresses as stored: lower-cased, one per mailbox, at most MAX_ADDED_RECIPIENTS, none the key's own; or a KeyRuleError. */
export function parseRecipients(inputs: readonly string[], keyMailbox: string): Array<{ email: string; mailbox: string }> {
  const parsed: Array<{ email: string; mailbox: string }> = [];
  for (const input of inputs) {
    const address = v.safeParse(Address, input);
    if (!address.success) throw new KeyRuleError('invalid', 'recipients', `Not an email address: ${JSON.stringify(input.slice(0, 100))}.`);
    const email = normaliseEmail(address.output);
    const mailbox = mailboxOf(email);
    if (mailbox === keyMailbox) throw new KeyRuleError('invalid', 'recipients', `${email} is the key's own address: it receives every message already.`);
    if (!parsed.some((other) => other.mailbox === mailbox)) parsed.push({ email, mailbox });
  }
  if (parsed.length > MAX_ADDED_RECIPIENTS) {
    throw new KeyRuleError('invalid', 'recipients', `At most ${MAX_ADDED_RECIPIENTS} more recipients per key, besides its own address.`);
  }
  return parsed;
}

/**
 * The key emails an hour per mailbox (KEY_EMAILS_PER_HOUR), and the erased form of an address
 * (src/shared/infra/secrets.ts createErasedForm): the requests to confirm of an erased address's
 * last 24 hours are kept under it, and still count.
 */
export type RecipientLimits = { emailsPerHour: number; erasedForm: (value: string) => string };

/** What changed: the key emails that ask the added addresses to confirm, to enqueue once committed. */
export type RecipientsChange = { confirmEmailIds: string[]; added: number; removed: number };

/**
 * The added recipients wanted: the whole list, or a change of the current one (the console adds or
 * removes one address at a time), worked out under the key's lock.
 */
export type RecipientsEdit = readonly string[] | ((current: ReadonlyArray<{ id: string; email: string }>) => readonly string[]);

/**
 * Makes the key's added recipients those `edit` wants: each address not among them is removed (with
 * its copies still held), each new one added and asked to confirm, within the bounds on those
 * requests; the ones kept are left as they are. In one transaction (the caller's, when it has one),
 * under the key's lock: a refusal changes nothing.
 */
export async function setRecipients(
  em: EntityManager,
  key: { id: string; mailbox: string; status: KeyStatus },
  edit: RecipientsEdit,
  limits: RecipientLimits,
): Promise<RecipientsChange> {
  if (key.status === 'deleted') throw new KeyRuleError('invalid', 'status', 'A deleted key cannot be changed.');
  return inTransaction(em, async (tx) => {
    await lockKeyRow(tx, key.id);
    const current = await findRecipientsOfKeys(tx, [key.id]);
    const parsed = parseRecipients(typeof edit === 'function' ? edit(current) : edit, key.mailbox);
    const removed = current.filter((recipient) => !parsed.some((address) => address.mailbox === recipient.mailbox));
    for (const recipient of removed) await deleteRecipient(tx, recipient.id);
    const confirmEmailIds: string[] = [];
    for (const address of parsed.filter((candidate) => !current.some((recipient) => recipient.mailbox === candidate.mailbox))) {
      await askToConfirm(tx, key.id, address, limits);
      await insertRecipient(tx, { keyId: key.id, ...address });
      confirmEmailIds.push(await insertRecipientConfirmEmail(tx, { keyId: key.id, ...address }));
    }
    return { confirmEmailIds, added: confirmEmailIds.length, removed: removed.length };
  });
}

/** Whether the address may be asked now, under its mailbox's lock (the one its key emails are counted under); an EmailCapError (429) when not. */
async function askToConfirm(tx: EntityManager, keyId: string, address: { email: string; mailbox: string }, limits: RecipientLimits): Promise<void> {
  await lockMailbox(tx, address.mailbox);
  const asked = await recipientConfirmsLastDay(tx, address.mailbox, limits.erasedForm(address.mailbox), keyId);
  if (asked.forKey >= CONFIRM_REQUESTS_PER_KEY) {
    throw new EmailCapError(
      Math.max(1, asked.keyRetryAfter ?? 86_400),
      'recipients',
      `${address.email} was asked to confirm for this key in the last 24 hours; it can be added again once that day is over.`,
    );
  }
  if (asked.forMailbox >= CONFIRM_REQUESTS_PER_MAILBOX) {
    throw new EmailCapError(
      Math.max(1, asked.mailboxRetryAfter ?? 86_400),
      'recipients',
      `${address.email} has been asked to confirm ${CONFIRM_REQUESTS_PER_MAILBOX} times in the last 24 hours; it can be added once that day is over.`,
    );
  }
  await checkEmailCap(tx, address.mailbox, limits.emailsPerHour, 'key-emails');
}

/** An added recipient as the APIs show it. */
export type RecipientRecord = { id: string; email: string; confirmed: boolean; confirmed_at: string | null; added_at: string };

const recipientRecord = (row: KeyRecipientRow): RecipientRecord => ({
  id: row.id,
  email: row.email,
  confirmed: row.confirmed_at !== null,
  confirmed_at: row.confirmed_at?.toISOString() ?? null,
  added_at: row.created_at.toISOString(),
});

/** The added recipients of some keys, by key id (a key without any has none in the map). */
export async function recipientsOfKeys(em: EntityManager, keyIds: string[]): Promise<Map<string, RecipientRecord[]>> {
  const byKey = new Map<string, RecipientRecord[]>();
  for (const row of await findRecipientsOfKeys(em, keyIds)) byKey.set(row.key_id, [...(byKey.get(row.key_id) ?? []), recipientRecord(row)]);
  return byKey;
}

/** A submission's copy as the records show it: to whom, what became of it, what came back, and whether it can be re-sent. */
export type CopyRecord = {
  copy_id: string;
  email: string;
  email_status: CopyRow['email_status'];
  email_attempts: number;
  last_error: string | null;
  sent_at: string | null;
  bounce: { type: string; status: string | null; diagnostic: string | null; reporting_mta: string | null; at: string } | null;
  /** The owner removed this address since: the copy is kept as it was, and not sent again. */
  removed: boolean;
  resendable: boolean;
};

const copyRecord = (row: CopyRow): CopyRecord => ({
  copy_id: row.id,
  email: row.email,
  email_status: row.email_status,
  email_attempts: row.email_attempts,
  last_error: row.last_error,
  sent_at: row.sent_at?.toISOString() ?? null,
  bounce:
    row.bounce_type && row.bounced_at
      ? {
          type: row.bounce_type,
          status: row.bounce_status,
          diagnostic: row.bounce_diagnostic,
          reporting_mta: row.bounce_mta,
          at: row.bounced_at.toISOString(),
        }
      : null,
  removed: row.removed,
  resendable: !row.removed && RESENDABLE.includes(row.email_status),
});

/** The copies of some submissions, by submission id. */
export async function copiesOfSubmissions(em: EntityManager, submissionIds: string[]): Promise<Map<string, CopyRecord[]>> {
  const bySubmission = new Map<string, CopyRecord[]>();
  for (const row of await findCopiesOf(em, submissionIds)) {
    bySubmission.set(row.submission_id, [...(bySubmission.get(row.submission_id) ?? []), copyRecord(row)]);
  }
  return bySubmission;
}

/**
 * The owner's email passed the spam check: the copies to the key's recipients are made (once),
 * `queued` for the confirmed ones and `held` for the others. Returns the ids of the queued ones made
 * now, to enqueue once the owner's email is sent or settled.
 */
export async function copySubmission(em: EntityManager, submissionId: string): Promise<string[]> {
  const made = await createCopies(em, submissionId);
  return made.filter((copy) => copy.status === QUEUED).map((copy) => copy.id);
}

/** The recipient confirmed through its link: lasting consent for this key, and its held copies released (their ids); undefined when the owner removed it. */
export async function confirmRecipient(em: EntityManager, recipientId: string): Promise<string[] | undefined> {
  return inTransaction(em, async (tx) => {
    if (!(await recordRecipientConfirmed(tx, recipientId))) return undefined;
    return releaseHeldCopies(tx, recipientId);
  });
}

/** The recipient asked, through its link, to receive no more: removed from the key, as the owner would. False when it was gone. */
export const removeRecipient = (em: EntityManager, recipientId: string) => inTransaction(em, (tx) => deleteRecipient(tx, recipientId));

export { findRecipientForConsent, findRecipientOfKey, type RecipientForConsent } from './data/key-recipients.ts';
export { deleteOldHeldCopies, findCopyOfSubmission, findCopyToSend, type CopyToSend } from './data/recipient-copies.ts';

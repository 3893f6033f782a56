// The key_emails table: the emails to key owners (new key, all keys, confirm, sign-in link, webhook
// switched off, an autoresponse test), as rows the delivery queue sends.
import type { EntityManager } from '@mikro-orm/postgresql';
import { KeyEmailSchema, type KeyEmail } from '../entities.ts';

/**
 * The hourly allowances of emails to one mailbox, apart: the key emails anyone can ask for with
 * POST / (new keys, all keys, and the one request to confirm), and the console's sign-in links, so
 * that strangers asking for keys cannot spend the links an owner needs to sign in.
 */
export type EmailAllowance = 'key-emails' | 'sign-in';
// An autoresponse test is the owner's own, bounded per key (autoresponseTestsLastHour): it spends neither.
const ALLOWANCE_KINDS: Record<EmailAllowance, string> = {
  'key-emails': "kind not in ('sign-in', 'autoresponse-test')",
  'sign-in': "kind = 'sign-in'",
};

/** The mailbox's emails of one allowance in the last hour, and in how many seconds the oldest of them leaves that hour. */
export async function keyEmailsLastHour(
  tx: EntityManager,
  mailbox: string,
  allowance: EmailAllowance,
): Promise<{ sent: number; retry_after: number | null } | undefined> {
  const [row] = await tx.execute<Array<{ sent: number; retry_after: number | null }>>(
    `select count(*)::int as sent,
            ceil(extract(epoch from (min(created_at) + interval '1 hour' - now())))::int as retry_after
       from key_emails where mailbox = ? and created_at > now() - interval '1 hour' and ${ALLOWANCE_KINDS[allowance]}`,
    [mailbox],
  );
  return row;
}

/** Adds the email listing every active key of the address. */
export async function insertAllKeysEmail(tx: EntityManager, email: string, mailbox: string): Promise<KeyEmail> {
  const keyEmail = tx.create(KeyEmailSchema, { kind: 'all-keys', email, mailbox });
  await tx.flush();
  return keyEmail;
}

/** The key email with its key (null for an email about no one key). */
export const findKeyEmailWithKey = (em: EntityManager, id: string) => em.findOneOrFail(KeyEmailSchema, id, { populate: ['key'] });

/** Records a mailbox's "confirm to receive more" email for the key's address; returns its row's id. */
export async function insertConfirmEmail(em: EntityManager, key: { id: string; email: string; mailbox: string }): Promise<string | undefined> {
  const [row] = await em.execute<Array<{ id: string }>>(
    `insert into key_emails (id, kind, email, mailbox, key_id) values (gen_random_uuid(), 'confirm', ?, ?, ?) returning id`,
    [key.email, key.mailbox, key.id],
  );
  return row?.id;
}

/** Records the request to an address added to key `keyId` to confirm it wants the key's messages; returns its row's id. */
export async function insertRecipientConfirmEmail(tx: EntityManager, request: { keyId: string; email: string; mailbox: string }): Promise<string> {
  const [row] = await tx.execute<Array<{ id: string }>>(
    `insert into key_emails (id, kind, email, mailbox, key_id) values (gen_random_uuid(), 'recipient-confirm', ?, ?, ?) returning id`,
    [request.email, request.mailbox, request.keyId],
  );
  return row!.id;
}

/**
 * The mailbox's requests to confirm as an added recipient in the last 24 hours: for key `keyId`,
 * and for every key; and in how many seconds the oldest of each leaves those 24 hours.
 */
export async function recipientConfirmsLastDay(
  tx: EntityManager,
  mailbox: string,
  erasedMailbox: string,
  keyId: string,
): Promise<{ forKey: number; forMailbox: number; keyRetryAfter: number | null; mailboxRetryAfter: number | null }> {
  const [row] = await tx.execute<Array<{ for_key: number; for_mailbox: number; key_retry_after: number | null; mailbox_retry_after: number | null }>>(
    `select count(*) filter (where key_id = ?)::int as for_key, count(*)::int as for_mailbox,
            ceil(extract(epoch from (min(created_at) filter (where key_id = ?) + interval '24 hours' - now())))::int as key_retry_after,
            ceil(extract(epoch from (min(created_at) + interval '24 hours' - now())))::int as mailbox_retry_after
       from key_emails where mailbox in (?, ?) and kind = 'recipient-confirm' and created_at > now() - interval '24 hours'`,
    [keyId, keyId, mailbox, erasedMailbox],
  );
  return {
    forKey: row?.for_key ?? 0,
    forMailbox: row?.for_mailbox ?? 0,
    keyRetryAfter: row?.key_retry_after ?? null,
    mailboxRetryAfter: row?.mailbox_retry_after ?? null,
  };
}

/** Records the key's autoresponse sent to its owner as a test; returns its row's id. */
export async function insertAutoresponseTestEmail(tx: EntityManager, key: { id: string; email: string; mailbox: string }): Promise<string> {
  const [row] = await tx.execute<Array<{ id: string }>>(
    `insert into key_emails (id, kind, email, mailbox, key_id) values (gen_random_uuid(), 'autoresponse-test', ?, ?, ?) returning id`,
    [key.email, key.mailbox, key.id],
  );
  return row!.id;
}

/** The key's autoresponse tests of the last hour, and in how many seconds the oldest of them leaves that hour; under the key's row lock, so that two at once count each other. */
export async function autoresponseTestsLastHour(tx: EntityManager, keyId: string): Promise<{ sent: number; retryAfter: number | null }> {
  await tx.execute(`select 1 from verification_keys where id = ? for update`, [keyId]);
  const [row] = await tx.execute<Array<{ sent: number; retry_after: number | null }>>(
    `select count(*)::int as sent,
            ceil(extract(epoch from (min(created_at) + interval '1 hour' - now())))::int as retry_after
       from key_emails where key_id = ? and kind = 'autoresponse-test' and created_at > now() - interval '1 hour'`,
    [keyId],
  );
  return { sent: row?.sent ?? 0, retryAfter: row?.retry_after ?? null };
}

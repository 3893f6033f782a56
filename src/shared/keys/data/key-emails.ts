// The key_emails table: the emails to key owners (new key, all keys, confirm, sign-in link, webhook
// switched off), as rows the delivery queue sends.
import type { EntityManager } from '@mikro-orm/postgresql';
import { KeyEmailSchema, type KeyEmail } from '../entities.ts';

/**
 * The hourly allowances of emails to one mailbox, apart: the key emails anyone can ask for with
 * POST / (new keys, all keys, and the one request to confirm), and the console's sign-in links, so
 * that strangers asking for keys cannot spend the links an owner needs to sign in.
 */
export type EmailAllowance = 'key-emails' | 'sign-in';
const ALLOWANCE_KINDS: Record<EmailAllowance, string> = { 'key-emails': "kind <> 'sign-in'", 'sign-in': "kind = 'sign-in'" };

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

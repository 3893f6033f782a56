// The erasure's statements on what is stored under the address itself, each bounded (a batch, or
// the few rows of a 24-hour bound). What the service must still know of the address (its
// suppression, the autoresponse and confirmation-request bounds of the last 24 hours) is kept
// under its erased form (src/shared/infra/secrets.ts createErasedForm); the rest is deleted.
import type { EntityManager } from '@mikro-orm/postgresql';

/** The address and its mailbox as stored, and their erased forms. */
export type ErasedAddress = { address: string; mailbox: string; erasedAddress: string; erasedMailbox: string };

/**
 * A row's email is still to go (a job may name it; it never reached the inbox, so the bounds need not
 * count it), or is past the bounds' 24 hours: deleted, not kept.
 */
const GOES = `(email_status in ('queued', 'sending', 'retrying', 'held') or created_at <= now() - interval '24 hours')`;

/** Deletes up to `limit` autoresponses to the address that are to go or past 24 hours; their ids (their jobs go too). */
export async function deleteAutoresponsesTo(em: EntityManager, who: ErasedAddress, limit: number): Promise<string[]> {
  const rows = await em.execute<Array<{ id: string }>>(
    `delete from autoresponses where id in (select id from autoresponses where mailbox = ? and lower(email) = ? and ${GOES} limit ?) returning id`,
    [who.mailbox, who.address, limit],
  );
  return rows.map((row) => row.id);
}

/** The autoresponses of the last 24 hours, still counted by the bounds, keep only their erased address; their ids. */
export async function keepAutoresponsesErased(em: EntityManager, who: ErasedAddress): Promise<string[]> {
  const rows = await em.execute<Array<{ id: string }>>(
    `update autoresponses set email = ?, mailbox = ?, submission_id = null, last_error = null, message_id = null, bounce_diagnostic = null, bounce_mta = null
      where mailbox = ? and lower(email) = ? returning id`,
    [who.erasedAddress, who.erasedMailbox, who.mailbox, who.address],
  );
  return rows.map((row) => row.id);
}

/** Deletes up to `limit` copies of other visitors' messages mailed to the address as an added recipient; their ids. */
export async function deleteCopiesTo(em: EntityManager, address: string, limit: number): Promise<string[]> {
  const rows = await em.execute<Array<{ id: string }>>(
    'delete from recipient_copies where id in (select id from recipient_copies where email = ? limit ?) returning id',
    [address, limit],
  );
  return rows.map((row) => row.id);
}

/** Takes the address off every form it was added to as a recipient, with its consent there; how many. */
export async function deleteRecipientEntriesOf(em: EntityManager, address: string): Promise<number> {
  const result = await em.execute<{ affectedRows: number }>('delete from key_recipients where email = ?', [address], 'run');
  return result.affectedRows;
}

/** Deletes up to `limit` of the service's emails to the address (of `kinds`) that are to go or past 24 hours; their ids. */
export async function deleteKeyEmailsTo(em: EntityManager, address: string, kinds: readonly string[], limit: number): Promise<string[]> {
  const rows = await em.execute<Array<{ id: string }>>(
    `delete from key_emails where id in (select id from key_emails where email = ? and kind in (?) and ${GOES} limit ?) returning id`,
    [address, kinds, limit],
  );
  return rows.map((row) => row.id);
}

/** Those emails of the last 24 hours, counted by the confirmation-request bounds, keep only their erased address; their ids. */
export async function keepKeyEmailsErased(em: EntityManager, who: ErasedAddress, kinds: readonly string[]): Promise<string[]> {
  const rows = await em.execute<Array<{ id: string }>>(
    `update key_emails set email = ?, mailbox = ?, last_error = null, message_id = null, bounce_diagnostic = null, bounce_mta = null
      where email = ? and kind in (?) returning id`,
    [who.erasedAddress, who.erasedMailbox, who.address, kinds],
  );
  return rows.map((row) => row.id);
}

/**
 * The address's hard bounces and its mailbox's complaint move to their erased forms (merged with
 * any kept by an earlier erasure), in one transaction: suppression never lapses in between.
 */
export async function keepSuppressionErased(em: EntityManager, who: ErasedAddress): Promise<{ bounces: number; complaints: number }> {
  return em.transactional(async (tx) => {
    await tx.execute(
      `insert into address_bounces as b (address, hard_bounces, last_bounced_at, suppressed_until)
         select ?, hard_bounces, last_bounced_at, suppressed_until from address_bounces where address = ?
       on conflict (address) do update set hard_bounces = greatest(b.hard_bounces, excluded.hard_bounces),
         last_bounced_at = greatest(b.last_bounced_at, excluded.last_bounced_at), suppressed_until = greatest(b.suppressed_until, excluded.suppressed_until)`,
      [who.erasedAddress, who.address],
      'run',
    );
    const bounces = await tx.execute<{ affectedRows: number }>('delete from address_bounces where address = ?', [who.address], 'run');
    await tx.execute(
      `insert into mailbox_complaints as c (mailbox, complained_at) select ?, complained_at from mailbox_complaints where mailbox = ?
       on conflict (mailbox) do update set complained_at = greatest(c.complained_at, excluded.complained_at)`,
      [who.erasedMailbox, who.mailbox],
      'run',
    );
    const complaints = await tx.execute<{ affectedRows: number }>('delete from mailbox_complaints where mailbox = ?', [who.mailbox], 'run');
    return { bounces: bounces.affectedRows, complaints: complaints.affectedRows };
  });
}

/** The mailbox's own consent record and hourly allowance counters (an owner's; none left once it owns no key); how many rows. */
export async function deleteMailboxConsent(em: EntityManager, mailbox: string): Promise<number> {
  const consent = await em.execute<{ affectedRows: number }>('delete from recipients where mailbox = ?', [mailbox], 'run');
  const allowances = await em.execute<{ affectedRows: number }>('delete from mailbox_allowances where mailbox = ?', [mailbox], 'run');
  return consent.affectedRows + allowances.affectedRows;
}

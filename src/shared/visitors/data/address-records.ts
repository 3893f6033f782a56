// What is stored under the address itself, beside its submissions: the autoresponses sent to it,
// its place among a form's added recipients (its consent) and the copies mailed to it there, the
// service's other emails to it, its bounces and complaints, and its mailbox's consent records.
import type { EntityManager } from '@mikro-orm/postgresql';

type JsonRow = Record<string, unknown>;

export type AddressRecords = {
  autoresponses: JsonRow[];
  added_recipient_of: JsonRow[];
  copies_received: JsonRow[];
  key_emails: JsonRow[];
  address_bounces: JsonRow[];
  mailbox_complaints: JsonRow[];
  mailbox_consent: JsonRow[];
  mailbox_allowances: JsonRow[];
};

/** Everything above for the lower-cased `address` and its `mailbox` (src/shared/keys/consent.ts mailboxOf). */
export async function readAddressRecords(em: EntityManager, address: string, mailbox: string): Promise<AddressRecords> {
  const rows = async (sql: string, values: unknown[]) => (await em.execute<Array<{ record: JsonRow }>>(sql, values)).map((row) => row.record);
  return {
    autoresponses: await rows(
      `select to_jsonb(a) - 'key_id' as record from autoresponses a where a.mailbox = ? and lower(a.email) = ? order by created_at, id`,
      [mailbox, address],
    ),
    added_recipient_of: await rows(
      `select jsonb_build_object('id', r.id, 'email', r.email, 'form_label', k.label, 'form_domains', k.domains,
              'confirmed_at', r.confirmed_at, 'added_at', r.created_at) as record
         from key_recipients r join verification_keys k on k.id = r.key_id where r.email = ? order by r.created_at, r.id`,
      [address],
    ),
    copies_received: await rows(
      `select to_jsonb(c) - 'key_id' - 'recipient_id' - 'claimed_at' as record from recipient_copies c where c.email = ? order by created_at, id`,
      [address],
    ),
    key_emails: await rows(`select to_jsonb(e) - 'key_id' - 'claimed_at' as record from key_emails e where e.email = ? order by created_at, id`, [address]),
    address_bounces: await rows('select to_jsonb(b) as record from address_bounces b where b.address = ?', [address]),
    mailbox_complaints: await rows('select to_jsonb(c) as record from mailbox_complaints c where c.mailbox = ?', [mailbox]),
    mailbox_consent: await rows('select to_jsonb(r) as record from recipients r where r.mailbox = ?', [mailbox]),
    mailbox_allowances: await rows('select to_jsonb(m) as record from mailbox_allowances m where m.mailbox = ? order by window_start', [mailbox]),
  };
}

/** How many keys the address (or its mailbox) owns, whatever their state: an owner's account, which a visitor's erasure leaves. */
export async function countKeysOwned(em: EntityManager, address: string, mailbox: string): Promise<number> {
  const [row] = await em.execute<Array<{ count: number }>>('select count(*)::int as count from verification_keys where email = ? or mailbox = ?', [
    address,
    mailbox,
  ]);
  return row?.count ?? 0;
}

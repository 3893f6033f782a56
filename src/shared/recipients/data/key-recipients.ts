// The key_recipients table: the addresses added to a key, their consent, and their removal (with
// the copies that were waiting for their consent: nothing could release those any more).
import type { EntityManager } from '@mikro-orm/postgresql';
import { HELD } from '../../deliveries/delivery-statuses.ts';

export type KeyRecipientRow = { id: string; key_id: string; email: string; mailbox: string; confirmed_at: Date | null; created_at: Date };

const COLUMNS = 'id, key_id, email, mailbox, confirmed_at, created_at';
const dated = (row: KeyRecipientRow): KeyRecipientRow => ({
  ...row,
  confirmed_at: row.confirmed_at && new Date(row.confirmed_at),
  created_at: new Date(row.created_at),
});

/** The added recipients of some keys, each key's in the order they were added. */
export async function findRecipientsOfKeys(em: EntityManager, keyIds: string[]): Promise<KeyRecipientRow[]> {
  if (keyIds.length === 0) return [];
  const rows = await em.execute<KeyRecipientRow[]>(`select ${COLUMNS} from key_recipients where key_id = any(?::uuid[]) order by created_at, id`, [
    `{${keyIds.join(',')}}`,
  ]);
  return rows.map(dated);
}

/** Its created_at is the clock's, not the transaction's: several added in one change keep their order. */
export async function insertRecipient(tx: EntityManager, recipient: { keyId: string; email: string; mailbox: string }): Promise<KeyRecipientRow> {
  const [row] = await tx.execute<KeyRecipientRow[]>(
    `insert into key_recipients (id, key_id, email, mailbox, created_at) values (gen_random_uuid(), ?, ?, ?, clock_timestamp()) returning ${COLUMNS}`,
    [recipient.keyId, recipient.email, recipient.mailbox],
  );
  return dated(row!);
}

/** Removes the recipient and its copies still held for its consent; false when it was gone already. */
export async function deleteRecipient(tx: EntityManager, id: string): Promise<boolean> {
  await tx.execute(`delete from recipient_copies where recipient_id = ? and email_status = '${HELD}'`, [id]);
  const result = await tx.execute<{ affectedRows: number }>('delete from key_recipients where id = ?', [id], 'run');
  return result.affectedRows > 0;
}

/** What the confirmation page shows of an added recipient: its address, and the address of the key's owner. */
export type RecipientForConsent = { id: string; email: string; confirmed: boolean; owner_email: string };

export async function findRecipientForConsent(em: EntityManager, id: string): Promise<RecipientForConsent | undefined> {
  const [row] = await em.execute<RecipientForConsent[]>(
    `select r.id, r.email, r.confirmed_at is not null as confirmed, k.email as owner_email
       from key_recipients r join verification_keys k on k.id = r.key_id where r.id = ?`,
    [id],
  );
  return row;
}

/** The recipient of key `keyId` behind `mailbox`, if the owner has not removed it. */
export async function findRecipientOfKey(em: EntityManager, keyId: string, mailbox: string): Promise<KeyRecipientRow | undefined> {
  const [row] = await em.execute<KeyRecipientRow[]>(`select ${COLUMNS} from key_recipients where key_id = ? and mailbox = ?`, [keyId, mailbox]);
  return row && dated(row);
}

/**
 * Records the recipient's consent (a confirmation already there keeps its time); false when it is
 * gone. Its row stays locked until the transaction ends: copies made at the same moment wait for it.
 */
export async function recordRecipientConfirmed(tx: EntityManager, id: string): Promise<boolean> {
  const rows = await tx.execute<Array<{ id: string }>>('update key_recipients set confirmed_at = coalesce(confirmed_at, now()) where id = ? returning id', [
    id,
  ]);
  return rows.length > 0;
}

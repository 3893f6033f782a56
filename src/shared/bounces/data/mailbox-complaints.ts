// The mailbox_complaints table: mailboxes that reported an email as spam, suppressed until their
// owner signs in (which deletes the row).
import type { EntityManager } from '@mikro-orm/postgresql';
import type pg from 'pg';

export async function recordComplaint(client: pg.PoolClient, mailbox: string): Promise<void> {
  await client.query(
    `insert into mailbox_complaints (mailbox, complained_at) values ($1, now())
     on conflict (mailbox) do update set complained_at = now()`,
    [mailbox],
  );
}

export async function forgetComplaint(tx: EntityManager, mailbox: string): Promise<void> {
  await tx.execute('delete from mailbox_complaints where mailbox = ?', [mailbox]);
}

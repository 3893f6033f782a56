// The mailbox_complaints table: mailboxes that reported an email as spam, suppressed until their
// owner signs in (which deletes the row).
import type { EntityManager } from '@mikro-orm/postgresql';
import type pg from 'pg';

/** The mailbox complained: its submission emails are not attempted until its owner signs in. */
export async function noteComplaint(client: pg.PoolClient, mailbox: string): Promise<void> {
  await client.query(
    `insert into mailbox_complaints (mailbox, complained_at) values ($1, now())
     on conflict (mailbox) do update set complained_at = now()`,
    [mailbox],
  );
}

export async function forgetComplaint(tx: EntityManager, mailbox: string): Promise<void> {
  await tx.execute('delete from mailbox_complaints where mailbox = ?', [mailbox]);
}

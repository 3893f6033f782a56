// Rows of the key_emails table written by the HTTP adapters.
import type { EntityManager } from '@mikro-orm/postgresql';

/** Records a mailbox's "confirm to receive more" email for the key's address; returns its row's id. */
export async function insertConfirmEmail(em: EntityManager, key: { id: string; email: string; mailbox: string }): Promise<string | undefined> {
  const [row] = await em.execute<Array<{ id: string }>>(
    `insert into key_emails (id, kind, email, mailbox, key_id) values (gen_random_uuid(), 'confirm', ?, ?, ?) returning id`,
    [key.email, key.mailbox, key.id],
  );
  return row?.id;
}

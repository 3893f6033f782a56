// The rows a submission's delivery makes as it goes: the copies of its email to the key's added
// recipients, each a delivery of its own (kind `recipient-copy`) that starts `queued` or `held`.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { EmailStatus } from '../delivery-columns.ts';
import { HELD, QUEUED } from '../delivery-statuses.ts';

/**
 * The copies of a submission's email to its key's added recipients (src/shared/recipients), made
 * once per recipient mailbox: for each address added before the submission came, `queued` when it
 * had confirmed and `held` until it does (the kind's CREATED_AS). The recipients' rows are locked
 * (shared) while the copies are made, so that a confirmation at the same moment either comes first
 * and is read here, or waits and then releases what this wrote. Returns the copies made now; a
 * second run (a retried attempt) makes none.
 */
export async function createCopies(em: EntityManager, submissionId: string): Promise<Array<{ id: string; status: EmailStatus }>> {
  return em.execute<Array<{ id: string; status: EmailStatus }>>(
    `insert into recipient_copies (id, submission_id, key_id, recipient_id, email, mailbox, email_status)
     select gen_random_uuid(), s.id, s.key_id, r.id, r.email, r.mailbox, case when r.confirmed_at is null then '${HELD}' else '${QUEUED}' end
       from submissions s join key_recipients r on r.key_id = s.key_id and r.created_at <= s.created_at
      where s.id = ?
        for share of r
     on conflict (submission_id, mailbox) do nothing
     returning id, email_status as status`,
    [submissionId],
  );
}

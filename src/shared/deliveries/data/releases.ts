// A delivery row put back in the queue, for every kind (../delivery-kinds.ts): a re-send, the
// consent release of held submissions and copies, the owner's "not spam" and the webhooks held
// back with it. Guards and statuses: ./status-sql.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SpamMark } from '../../words/spam-kinds.ts';
import type { KindFor } from '../delivery-transitions.ts';
import { andStatus, statusAfter, statusCondition, tableOf } from './status-sql.ts';

/** The key that owns a row, per kind: an owner may re-send only rows of their keys. */
const OWNED_BY: Record<KindFor<'requeue-for-resend'>, string> = {
  submission: 'key_id = ?',
  'recipient-copy': 'key_id = ?',
  webhook: 'endpoint_id in (select id from webhook_endpoints where key_id = ?)',
};

/** What a re-send forgets: the report of the earlier email (emails only; webhooks have none). */
const FORGET_REPORT: Record<KindFor<'requeue-for-resend'>, string> = {
  submission: ', bounce_type = null, bounce_status = null, bounce_diagnostic = null, bounce_mta = null, bounced_at = null',
  'recipient-copy': ', bounce_type = null, bounce_status = null, bounce_diagnostic = null, bounce_mta = null, bounced_at = null',
  webhook: '',
};

/**
 * A failed, bounced or suppressed row (of key `keyId`, when given) back to `queued`, for a re-send:
 * the reconciler finds it should the enqueue that follows be lost. A fresh delivery: its attempts
 * count from 0 and its retry horizon from now, so a row failed for good after the horizon is not
 * failed again by its first temporary refusal. False when there is no such row.
 */
export async function requeueFailed(em: EntityManager, kind: KindFor<'requeue-for-resend'>, id: string, keyId?: string): Promise<boolean> {
  const rows = await em.execute<Array<{ id: string }>>(
    `update ${tableOf(kind)} set email_status = ${statusAfter(kind, 'requeue-for-resend')}, claimed_at = null, email_attempts = 0, requeued_at = now()${FORGET_REPORT[kind]}
      where id = ?${andStatus(kind, 'requeue-for-resend')} ${keyId === undefined ? '' : `and ${OWNED_BY[kind]}`}
      returning id`,
    keyId === undefined ? [id] : [id, keyId],
  );
  return rows.length > 0;
}

/**
 * The consent release: the `held` submissions of the keys sending to `mailbox` become `queued`, their
 * retry horizon counted from now (they may have waited days); returns their ids to enqueue.
 */
export async function releaseHeld(em: EntityManager, mailbox: string): Promise<string[]> {
  const released = await em.execute<Array<{ id: string }>>(
    `update submissions set email_status = ${statusAfter('submission', 'release-held')}, requeued_at = now()
      where not settled${andStatus('submission', 'release-held')} and key_id in (select id from verification_keys where mailbox = ?)
      returning id`,
    [mailbox],
  );
  return released.map((row) => row.id);
}

/** An added recipient confirmed (`release-held`): its held copies become `queued`, their horizon counted from now; their ids, to enqueue. */
export async function releaseHeldCopies(em: EntityManager, recipientId: string): Promise<string[]> {
  const released = await em.execute<Array<{ id: string }>>(
    `update recipient_copies set email_status = ${statusAfter('recipient-copy', 'release-held')}, requeued_at = now()
      where recipient_id = ?${andStatus('recipient-copy', 'release-held')}
      returning id`,
    [recipientId],
  );
  return released.map((row) => row.id);
}

/**
 * The owner's mark on a submission (src/api/owners/spam-marks.ts), under the row's lock; `reserved`:
 * a place in the teaching allowance is taken for it (spam_taught_at pending until the filter
 * answers). "Not spam" on a submission held as spam is the `mark-not-spam` event: queued again as
 * a fresh delivery. Returns whether it was so released.
 */
export async function writeSpamMark(em: EntityManager, id: string, mark: SpamMark, reserved: boolean): Promise<boolean> {
  const release = mark === 'ham';
  const moves = `? and ${statusCondition('submission', 'mark-not-spam', { column: 'b.before' })}`;
  const rows = await em.execute<Array<{ released: boolean }>>(
    `update submissions s
        set spam_mark = ?, spam_marked_at = now(),
            spam_taught_at = case when ? then now() when s.spam_mark = ? then s.spam_taught_at else null end,
            spam_teach_pending = case when ? then true when s.spam_mark = ? then s.spam_teach_pending else false end,
            email_status = case when ${moves} then ${statusAfter('submission', 'mark-not-spam', 'b.before')} else s.email_status end,
            requeued_at = case when ${moves} then now() else s.requeued_at end,
            email_attempts = case when ${moves} then 0 else s.email_attempts end
       from (select id, email_status as before from submissions where id = ? for update) b
      where s.id = b.id
      returning (${moves}) as released`,
    [mark, reserved, mark, reserved, mark, release, release, release, id, release],
  );
  return rows[0]?.released ?? false;
}

/** The webhook events held back with a submission the owner marked not spam (`mark-not-spam`): `queued`; their ids, to enqueue. */
export async function releaseSkippedWebhooks(em: EntityManager, submissionId: string): Promise<string[]> {
  const released = await em.execute<Array<{ id: string }>>(
    `update webhook_deliveries set email_status = ${statusAfter('webhook', 'mark-not-spam')}, last_error = null
      where submission_id = ?${andStatus('webhook', 'mark-not-spam')} returning id`,
    [submissionId],
  );
  return released.map((row) => row.id);
}

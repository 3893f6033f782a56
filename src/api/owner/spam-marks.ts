// The owner's marks on a submission: "not spam" (ham) and "spam". A mark always does what the owner
// asked of the message (not spam: a held submission is queued and emailed), and is taught to the
// spam filter while the key's allowance lasts: SPAM_TEACH_PER_KEY_PER_HOUR marks an hour, so that
// one key cannot flood the statistics every key shares. Every mark can be reversed by the other.
import type { EntityManager } from '@mikro-orm/postgresql';
import { AttachmentSchema, type SpamMark, type Submission } from '../../shared/db/entities.ts';
import { QUEUED } from '../../shared/delivery-statuses.ts';
import { spamMarks } from '../../shared/metrics.ts';
import { submissionJob, webhookJob } from '../../shared/queue.ts';
import type { AppContext, AppDeps } from '../context.ts';
import { enqueueCommitted } from '../enqueue.ts';
import { clearFinishedJob, ownedSubmission } from './access.ts';

/** How long teaching may take before the owner's answer goes without it. */
const TEACH_TIMEOUT_MS = 3_000;

/**
 * taught: the filter learned it; known: nothing to learn (learned before, or too short); capped: past the
 * key's hourly allowance; failed: the filter could not be reached; off: no filter is configured.
 */
export type TeachOutcome = 'taught' | 'known' | 'capped' | 'failed' | 'off';

export type MarkResult = { submission: Submission; teaching: TeachOutcome; released: boolean };

/** Marks the owner's submission; undefined when it is not the owner's. */
export async function markSubmission(ctx: AppContext, deps: AppDeps, email: string, id: string, mark: SpamMark): Promise<MarkResult | undefined> {
  const em = deps.orm.em.fork();
  const submission = await ownedSubmission(em, email, id);
  if (!submission) return undefined;
  await em.populate(submission, ['key']);

  const { reserved, released } = await recordMark(em, deps, submission, mark);
  let teaching: TeachOutcome = !deps.spamFilter ? 'off' : reserved ? 'taught' : 'capped';
  if (reserved && deps.spamFilter) {
    const files = await em.find(AttachmentSchema, { submission: id }, { orderBy: { createdAt: 'asc' } });
    try {
      teaching = await deps.spamFilter.learn(
        {
          mailFrom: deps.config.MAIL_FROM,
          ownerEmail: submission.key.email,
          ownerMailbox: submission.key.mailbox,
          visitorEmail: submission.email,
          subject: submission.subject,
          message: submission.message,
          customFields: submission.customFields,
          filenames: files.map((file) => file.filename),
        },
        mark,
        TEACH_TIMEOUT_MS,
      );
    } catch (error) {
      teaching = 'failed';
      ctx.state.log.warn({ err: error, submissionId: id }, 'the spam filter could not learn the mark');
      // Not taught: it does not count against the allowance.
      await em.execute('update submissions set spam_taught_at = null where id = ?', [id]);
    }
  }
  if (teaching === 'taught') await countTaught(em, submission.key.mailbox, mark);
  spamMarks.inc({ mark, outcome: teaching });
  if (released) {
    // The job that held it finished under the row's id: a new one with that id would be a no-op.
    await clearFinishedJob(deps.queue, id).catch((error: unknown) => ctx.state.log.warn({ err: error }, 'could not clear the finished job'));
    await enqueueCommitted(ctx, deps, submissionJob(id, ctx.state.requestId));
    // The webhook events held back with it go out now, with the owner's mark.
    const held = await em.execute<Array<{ id: string }>>(
      `update webhook_deliveries set email_status = '${QUEUED}', last_error = null where submission_id = ? and email_status = 'skipped' returning id`,
      [id],
    );
    for (const row of held) {
      await clearFinishedJob(deps.webhookQueue, row.id).catch((error: unknown) => ctx.state.log.warn({ err: error }, 'could not clear the finished job'));
      await enqueueCommitted(ctx, deps, webhookJob(row.id, ctx.state.requestId));
    }
  }
  ctx.state.log.info({ submissionId: id, mark, teaching, released }, 'owner marked a submission');
  await em.refresh(submission);
  return { submission, teaching, released };
}

/**
 * Writes the mark, in one transaction under a lock per key (so two marks at once cannot both take
 * the last of the allowance): reserves a place in the allowance (spam_taught_at, cleared again if
 * teaching fails), and queues a submission held as spam that the owner says is not.
 */
async function recordMark(em: EntityManager, deps: AppDeps, submission: Submission, mark: SpamMark): Promise<{ reserved: boolean; released: boolean }> {
  return em.transactional(async (tx) => {
    await tx.execute('select pg_advisory_xact_lock(hashtext(?))', [`spam-teach:${submission.key.id}`]);
    const [counted] = await tx.execute<Array<{ taught: number }>>(
      `select count(*)::int as taught from submissions where key_id = ? and spam_taught_at > now() - interval '1 hour'`,
      [submission.key.id],
    );
    const reserved = deps.spamFilter !== undefined && (counted?.taught ?? 0) < deps.config.SPAM_TEACH_PER_KEY_PER_HOUR && submission.spamMark !== mark;
    const release = mark === 'ham';
    const rows = await tx.execute<Array<{ released: boolean }>>(
      `update submissions s
          set spam_mark = ?, spam_marked_at = now(),
              spam_taught_at = case when ? then now() when s.spam_mark = ? then s.spam_taught_at else null end,
              email_status = case when ? and b.before = 'spam' then '${QUEUED}' else s.email_status end,
              requeued_at = case when ? and b.before = 'spam' then now() else s.requeued_at end,
              email_attempts = case when ? and b.before = 'spam' then 0 else s.email_attempts end
         from (select id, email_status as before from submissions where id = ? for update) b
        where s.id = b.id
        returning (? and b.before = 'spam') as released`,
      [mark, reserved, mark, release, release, release, submission.id, release],
    );
    return { reserved, released: rows[0]?.released ?? false };
  });
}

/**
 * One more mark taught for this owner: once there are OWNER_MIN_LEARNS of each kind, the checks of
 * their keys read their own statistics too (../../workers/spam-check.ts). Never counted down: a
 * reversed mark unlearns in rspamd, and reading statistics too few to count only costs time.
 */
async function countTaught(em: EntityManager, mailbox: string, mark: SpamMark): Promise<void> {
  const [spam, ham] = mark === 'spam' ? [1, 0] : [0, 1];
  await em.execute(
    `insert into owner_spam_marks (mailbox, spam, ham) values (?, ?, ?)
       on conflict (mailbox) do update set spam = owner_spam_marks.spam + excluded.spam, ham = owner_spam_marks.ham + excluded.ham`,
    [mailbox, spam, ham],
  );
}

// Teaching the spam filter the owners' marks, within each key's allowance: at most
// SPAM_TEACH_PER_KEY_PER_HOUR marks an hour, so that one key cannot flood the statistics every key
// shares. A mark past the allowance, or made while the filter was unavailable, is kept untaught
// (spam_taught_at null) and taught later, oldest first, as the key's allowance frees up: an owner
// who goes through a backlog in one sitting loses none of it. A place is reserved before the filter
// is asked (spam_teach_pending until it answers), and a reservation that outlived the process that
// made it goes back to untaught. The allowance counts teachings (spam_teachings), not marks: a
// place comes back only for a teaching the filter never did, so reversing or deleting a taught mark
// cannot make room for more.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SpamMark } from '../words/spam-kinds.ts';
import type { Logger } from '../infra/log.ts';
import type { SpamFilter } from './spam-filter.ts';
import { inTransaction } from '../infra/db/transactions.ts';
import { findAttachments, findSubmissionWithKey } from '../submissions/submissions.ts';
import { countTaughtMark } from './data/owner-spam-marks.ts';
import { teachingSampleOf } from './samples.ts';
import {
  countTeachingsThisHour,
  currentMark,
  endPending,
  giveBackPlaces,
  insertTeaching,
  keysWithUntaughtMarks,
  lockTeachingAllowance,
  markUntaught,
  releaseStaleReservations,
  reserveAgain,
  reserveUntaughtMarks,
} from './data/spam-teachings.ts';

export { deleteOldTeachings } from './data/spam-teachings.ts';

/** taught: the filter learned it; known: nothing to learn (learned before, or too short); failed: the filter could not be reached. */
export type TeachResult = 'taught' | 'known' | 'failed';

export type TeachingSettings = { mailFrom: string; perKeyPerHour: number; timeoutMs: number };

/**
 * Takes the key's teaching lock for the rest of the transaction (so two marks at once cannot both
 * take the last of the allowance) and returns how many more marks the key may teach this hour.
 */
export async function allowanceLeft(tx: EntityManager, keyId: string, perKeyPerHour: number): Promise<number> {
  await lockTeachingAllowance(tx, keyId);
  return Math.max(0, perKeyPerHour - (await countTeachingsThisHour(tx, keyId)));
}

/** Takes a place in the key's allowance for teaching the submission's mark (under the key's lock, see allowanceLeft). */
export const takePlace = (tx: EntityManager, keyId: string, submissionId: string, mark: SpamMark): Promise<void> =>
  insertTeaching(tx, keyId, submissionId, mark);

/**
 * How old a reservation may be before it counts as left behind by a process that died: far longer
 * than teaching a mark may take (3 s for the owner's click, 10 s for each mark of the periodic job,
 * which stops starting new ones after 30 s).
 */
export const STALE_RESERVATION_MS = 5 * 60_000;

/** Learning again after a reversal, at most: an owner flipping a mark back and forth cannot keep a teaching going. */
const MAX_LEARNS_PER_TEACHING = 3;

/**
 * Teaches the filter a submission's current mark, its place in the allowance already reserved
 * (spam_taught_at set, spam_teach_pending). When the filter cannot learn it, the mark goes back to
 * untaught: it does not count against the allowance, and is taught later.
 */
export async function teachMark(em: EntityManager, filter: SpamFilter, settings: TeachingSettings, submissionId: string, log: Logger): Promise<TeachResult> {
  const submission = await findSubmissionWithKey(em, submissionId);
  const marked = submission?.spamMark;
  if (!submission || !marked) {
    await endPending(em, submissionId);
    return 'known';
  }
  const files = await findAttachments(em, submissionId);
  const sample = teachingSampleOf(
    submission,
    files.map((file) => file.filename),
    settings.mailFrom,
  );
  let mark: SpamMark = marked;
  let result: TeachResult;
  for (let learned = 1; ; learned += 1) {
    try {
      result = await filter.learn(sample, mark, settings.timeoutMs);
    } catch (error) {
      log.warn({ err: error, submissionId }, 'the spam filter could not learn a mark; it is taught later');
      // Its place comes back, and the mark waits untaught.
      await giveBackPlaces(em, [submissionId]);
      return 'failed';
    }
    // Known counts too: the filter holds the message in that class (a teaching that timed out may
    // still have been learned).
    // One more mark taught for this owner: once there are OWNER_MIN_LEARNS of each kind, the checks
    // of their keys read their own statistics too (src/workers/spam/spam-check.ts). Never counted down: a
    // reversed mark unlearns in rspamd, and reading statistics too few to count only costs time.
    await countTaughtMark(em, submission.key.mailbox, mark);
    // The owner may have reversed the mark while the filter learned this one: the filter learns
    // the one the owner left too (it unlearns the other), so that it ends with the owner's word,
    // at once while the key's allowance lasts, later otherwise.
    const now = await currentMark(em, submissionId);
    if (!now || now === mark) break;
    const reversal: SpamMark = now;
    const placed = await inTransaction(em, async (tx) => {
      if (learned === MAX_LEARNS_PER_TEACHING || (await allowanceLeft(tx, submission.key.id, settings.perKeyPerHour)) === 0) return false;
      await reserveAgain(tx, submissionId);
      await takePlace(tx, submission.key.id, submissionId, reversal);
      return true;
    });
    if (!placed) {
      // Taught later, once the key's allowance has room (the places taken so far stay taken).
      await markUntaught(em, submissionId);
      return result;
    }
    mark = reversal;
  }
  await endPending(em, submissionId);
  return result;
}

/** Keys with marks waiting and allowance left, taught in one run: the oldest waiting first. */
const KEYS_PER_RUN = 100;
/**
 * How long one run may go on starting to teach marks. The periodic jobs run one at a time for the
 * fleet, so a slow filter must not hold the reconciler back for long.
 */
const RUN_BUDGET_MS = 30_000;

/**
 * The periodic job: teaches the marks left untaught, oldest first, as far as each key's allowance
 * goes. Stops at the first mark the filter cannot learn (it is down: the next run tries again) and
 * once its time budget is spent; the marks it had set aside wait for the next run. Returns how many
 * were taught.
 */
export async function teachUntaughtMarks(
  em: EntityManager,
  filter: SpamFilter,
  settings: TeachingSettings & { keysPerRun?: number; budgetMs?: number },
  log: Logger,
): Promise<number> {
  const deadline = Date.now() + (settings.budgetMs ?? RUN_BUDGET_MS);
  const stale = await releaseStaleReservations(em, STALE_RESERVATION_MS);
  if (stale) log.warn({ marks: stale }, 'marks reserved for teaching by a process that stopped before the filter answered: taught again');
  // Only keys with allowance left: keys that have spent theirs cannot hold back the others.
  const keys = await keysWithUntaughtMarks(em, settings.perKeyPerHour, settings.keysPerRun ?? KEYS_PER_RUN);
  let taught = 0;
  teaching: for (const keyId of keys) {
    const reserved = await inTransaction(em, async (tx) => {
      const left = await allowanceLeft(tx, keyId, settings.perKeyPerHour);
      if (left === 0) return [];
      const rows = await reserveUntaughtMarks(tx, keyId, left);
      for (const row of rows) await takePlace(tx, keyId, row.id, row.mark);
      return rows;
    });
    for (const [index, { id }] of reserved.entries()) {
      const result = Date.now() < deadline ? await teachMark(em.fork(), filter, settings, id, log) : 'out of time';
      if (result === 'failed' || result === 'out of time') {
        // teachMark put a failed mark back itself; the rest of the key's go back untaught.
        const rest = reserved.slice(result === 'failed' ? index + 1 : index);
        await giveBackPlaces(
          em,
          rest.map((row) => row.id),
        );
        break teaching;
      }
      if (result === 'taught') taught += 1;
    }
  }
  if (taught) log.info({ taught }, "taught marks that had waited for their key's allowance or for the filter");
  return taught;
}

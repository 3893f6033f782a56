// Spam campaigns across owners: one spam text sent to many forms. Each owner's mark stores the
// message's fingerprint (./campaign-fingerprint.ts) with the owner's mailbox: a vote. A message
// near-identical to what the owners of CAMPAIGN_MAILBOXES different mailboxes marked spam is held for
// every other key too (src/workers/spam-check.ts), unless its own owner marked such a message not
// spam. Votes count by mailbox, so one owner (all their keys, every spelling of their address) is
// one vote however often they mark; a mark reversed to not spam is no longer a spam vote. Votes are
// kept CAMPAIGN_VOTE_DAYS (deleted by the retention job): campaigns come and go within days.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SpamMark } from './db/entities.ts';
import { campaignFingerprint, MATCHING, type Fingerprint } from './campaign-fingerprint.ts';

/** Different mailboxes whose owners marked a text spam before it is held for everyone. */
export const CAMPAIGN_MAILBOXES = 3;
/** How long a mark counts as a vote. */
export const CAMPAIGN_VOTE_DAYS = 30;

/** The votes on a checked message's text. */
export type CampaignVotes = {
  /** Other mailboxes whose owners marked a near-identical message spam. */
  otherMailboxes: number;
  /** The checked key's own mailbox marked one spam, or not spam. */
  ownSpam: boolean;
  ownHam: boolean;
};

/** A Postgres array literal of integers (a parameter, cast where it is used). */
const intArray = (values: number[]) => `{${values.join(',')}}`;

/**
 * Records (or, on a reversal, turns over) the vote of the owner's mark on a submission: one row per
 * submission, refreshed by each mark. A message too short for a fingerprint has no vote.
 */
export async function recordCampaignVote(tx: EntityManager, vote: { submissionId: string; mailbox: string; mark: SpamMark; message: string }): Promise<void> {
  const fingerprint = campaignFingerprint(vote.message);
  if (!fingerprint) return;
  await tx.execute(
    `insert into spam_campaign_votes (submission_id, mailbox, mark, hashes, bands, marked_at)
       values (?, ?, ?, ?::int4[], ?::int4[], now())
     on conflict (submission_id) do update set mark = excluded.mark, marked_at = excluded.marked_at`,
    [vote.submissionId, vote.mailbox, vote.mark, intArray(fingerprint.hashes), intArray(fingerprint.bands)],
  );
}

/**
 * The votes on messages near-identical to `fingerprint`, for a key of `mailbox`: one statement.
 * The bands' index (GIN, `&&`: at least one band in common) finds the few stored fingerprints worth
 * comparing; of those, the ones whose values mostly agree, position by position, count.
 */
export async function campaignVotes(em: EntityManager, mailbox: string, fingerprint: Fingerprint): Promise<CampaignVotes> {
  const [row] = await em.execute<Array<{ others: number; own_spam: boolean; own_ham: boolean }>>(
    `select count(distinct mailbox) filter (where mark = 'spam' and mailbox <> ?)::int as others,
            coalesce(bool_or(mark = 'spam' and mailbox = ?), false) as own_spam,
            coalesce(bool_or(mark = 'ham' and mailbox = ?), false) as own_ham
       from spam_campaign_votes
      where bands && ?::int4[] and marked_at > now() - make_interval(days => ?)
        and (select count(*) from unnest(hashes, ?::int4[]) as pair(stored, checked) where stored = checked) >= ?`,
    [mailbox, mailbox, mailbox, intArray(fingerprint.bands), CAMPAIGN_VOTE_DAYS, intArray(fingerprint.hashes), MATCHING],
  );
  return { otherMailboxes: row?.others ?? 0, ownSpam: row?.own_spam ?? false, ownHam: row?.own_ham ?? false };
}

/** Whether the votes hold the message: enough mailboxes marked it spam, and its own owner never said not spam. */
export function isCampaign(votes: CampaignVotes): boolean {
  return !votes.ownHam && votes.otherMailboxes + (votes.ownSpam ? 1 : 0) >= CAMPAIGN_MAILBOXES;
}

/** Retention: votes older than CAMPAIGN_VOTE_DAYS no longer count. */
export async function deleteOldCampaignVotes(em: EntityManager): Promise<void> {
  await em.execute('delete from spam_campaign_votes where marked_at < now() - make_interval(days => ?)', [CAMPAIGN_VOTE_DAYS]);
}

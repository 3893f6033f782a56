// The spam_campaign_votes table: each marked submission's text fingerprint (MinHash values and
// their bands, GIN-indexed), its owner's mailbox and that mailbox's domain, and the mark.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SpamMark } from '../../words/spam-kinds.ts';
import type { Fingerprint } from '../campaign-fingerprint.ts';

/** A Postgres array literal of integers (a parameter, cast where it is used). */
const intArray = (values: number[]) => `{${values.join(',')}}`;

/** Records the vote of a mark on a submission, or turns it over: one row per submission, refreshed by each mark. */
export async function upsertVote(
  tx: EntityManager,
  vote: { submissionId: string; mailbox: string; domain: string; mark: SpamMark; fingerprint: Fingerprint },
): Promise<void> {
  await tx.execute(
    `insert into spam_campaign_votes (submission_id, mailbox, domain, mark, hashes, bands, marked_at)
       values (?, ?, ?, ?, ?::int4[], ?::int4[], now())
     on conflict (submission_id) do update set mark = excluded.mark, marked_at = excluded.marked_at`,
    [vote.submissionId, vote.mailbox, vote.domain, vote.mark, intArray(vote.fingerprint.hashes), intArray(vote.fingerprint.bands)],
  );
}

/**
 * The votes of the last `days` days on texts near-identical to `fingerprint`, as a key of `mailbox`
 * sees them: one statement. The bands' index (GIN, `&&`: at least one band in common) finds the few
 * stored fingerprints worth comparing; of those, the ones with at least `matching` values equal,
 * position by position, count: the other mailboxes that marked it spam, and the domains of all that did.
 */
export async function votesOnText(
  em: EntityManager,
  mailbox: string,
  fingerprint: Fingerprint,
  days: number,
  matching: number,
): Promise<{ others: number; spam_domains: number; own_spam: boolean; own_ham: boolean } | undefined> {
  const [row] = await em.execute<Array<{ others: number; spam_domains: number; own_spam: boolean; own_ham: boolean }>>(
    `select count(distinct mailbox) filter (where mark = 'spam' and mailbox <> ?)::int as others,
            count(distinct domain) filter (where mark = 'spam')::int as spam_domains,
            coalesce(bool_or(mark = 'spam' and mailbox = ?), false) as own_spam,
            coalesce(bool_or(mark = 'ham' and mailbox = ?), false) as own_ham
       from spam_campaign_votes
      where bands && ?::int4[] and marked_at > now() - make_interval(days => ?)
        and (select count(*) from unnest(hashes, ?::int4[]) as pair(stored, checked) where stored = checked) >= ?`,
    [mailbox, mailbox, mailbox, intArray(fingerprint.bands), days, intArray(fingerprint.hashes), matching],
  );
  return row;
}

/** Deletes the votes older than `days` days. */
export async function deleteVotesOlderThan(em: EntityManager, days: number): Promise<void> {
  await em.execute('delete from spam_campaign_votes where marked_at < now() - make_interval(days => ?)', [days]);
}

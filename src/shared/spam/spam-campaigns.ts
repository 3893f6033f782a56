// Spam campaigns across owners: one spam text sent to many forms. Each owner's mark stores the
// message's fingerprint (./campaign-fingerprint.ts) with the owner's mailbox: a vote. A message
// near-identical to what the owners of CAMPAIGN_MAILBOXES different mailboxes, at as many different
// domains, marked spam is held for every other key too (src/workers/spam/spam-check.ts), unless its
// own owner marked such a message not spam. Votes count by mailbox, so one owner (all their keys,
// every spelling of their address) is one vote however often they mark, and by domain, so the
// mailboxes of one domain (anyone with a domain has as many as they like) are one voice. A mark
// reversed to not spam is no longer a spam vote. Votes are kept CAMPAIGN_VOTE_DAYS (deleted by the
// retention job): campaigns come and go within days.
// The same votes hold, for an owner's own keys, a near-copy of what that owner marked spam
// (isOwnCopy): rspamd's statistics, taught a few hundred marks, are often unsure of a spam text
// the owner has already marked, with a name or a link changed.
import type { EntityManager } from '@mikro-orm/postgresql';
import { getDomain } from 'tldts';
import type { SpamMark } from '../words/spam-kinds.ts';
import { campaignFingerprint, MATCHING, type Fingerprint } from './campaign-fingerprint.ts';
import { deleteVotesOlderThan, upsertVote, votesOnText } from './data/spam-campaign-votes.ts';

/** Different mailboxes, at as many different domains, whose owners marked a text spam before it is held for everyone. */
export const CAMPAIGN_MAILBOXES = 3;
/** How long a mark counts as a vote. */
export const CAMPAIGN_VOTE_DAYS = 30;

/** The votes on a checked message's text. */
export type CampaignVotes = {
  /** Other mailboxes whose owners marked a near-identical message spam. */
  otherMailboxes: number;
  /** Different domains (voteDomainOf) of the mailboxes that marked it spam, the checked key's own included. */
  spamDomains: number;
  /** The checked key's own mailbox marked one spam, or not spam. */
  ownSpam: boolean;
  ownHam: boolean;
};

/**
 * Records (or, on a reversal, turns over) the vote of the owner's mark on a submission: one row per
 * submission, refreshed by each mark. A message too short for a fingerprint has no vote.
 */
export async function recordCampaignVote(tx: EntityManager, vote: { submissionId: string; mailbox: string; mark: SpamMark; message: string }): Promise<void> {
  const fingerprint = campaignFingerprint(vote.message);
  if (!fingerprint) return;
  await upsertVote(tx, { submissionId: vote.submissionId, mailbox: vote.mailbox, domain: voteDomainOf(vote.mailbox), mark: vote.mark, fingerprint });
}

/**
 * Microsoft's consumer domains: separate mailboxes (src/shared/keys/consent.ts), but one provider, where
 * one person opens an account under each name as easily as three under one: one domain for the count.
 */
const ONE_PROVIDER: ReadonlyMap<string, string> = new Map(['hotmail.com', 'live.com', 'msn.com'].map((domain) => [domain, 'outlook.com']));

/**
 * The domain a mailbox votes from: its registrable domain under the public suffix list's ICANN part
 * (`sales.shop.example.co.uk` → `example.co.uk`; not its private part, whose free subdomains, such
 * as dynamic DNS names, anyone can have many of), or the mailbox's domain as written when it has
 * none (an IP literal, a bare host).
 */
export function voteDomainOf(mailbox: string): string {
  const host = mailbox.slice(mailbox.lastIndexOf('@') + 1);
  const domain = getDomain(host, { allowPrivateDomains: false }) ?? host;
  return ONE_PROVIDER.get(domain) ?? domain;
}

/**
 * The votes on messages near-identical to `fingerprint` (MATCHING of its values agree, position by
 * position), for a key of `mailbox`: one indexed statement.
 */
export async function campaignVotes(em: EntityManager, mailbox: string, fingerprint: Fingerprint): Promise<CampaignVotes> {
  const row = await votesOnText(em, mailbox, fingerprint, CAMPAIGN_VOTE_DAYS, MATCHING);
  return { otherMailboxes: row?.others ?? 0, spamDomains: row?.spam_domains ?? 0, ownSpam: row?.own_spam ?? false, ownHam: row?.own_ham ?? false };
}

/**
 * Whether the votes hold the message: enough mailboxes, at enough domains, marked it spam, and its
 * own owner never said not spam.
 */
export function isCampaign(votes: CampaignVotes): boolean {
  return !votes.ownHam && votes.otherMailboxes + (votes.ownSpam ? 1 : 0) >= CAMPAIGN_MAILBOXES && votes.spamDomains >= CAMPAIGN_MAILBOXES;
}

/**
 * Whether the votes hold the message for its own owner's keys: near-identical to a message this
 * owner marked spam, and to none they marked not spam. One owner's marks hold nothing of another's
 * (isCampaign needs CAMPAIGN_MAILBOXES); for their own keys, their word on a text is enough.
 */
export function isOwnCopy(votes: CampaignVotes): boolean {
  return votes.ownSpam && !votes.ownHam;
}

/** Retention: votes older than CAMPAIGN_VOTE_DAYS no longer count. */
export async function deleteOldCampaignVotes(em: EntityManager): Promise<void> {
  await deleteVotesOlderThan(em, CAMPAIGN_VOTE_DAYS);
}

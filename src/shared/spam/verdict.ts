// The spam verdict on a submission before its email is sent (src/workers/spam/spam-check.ts asks the
// filter and the campaign votes): the filter's score against the key's level, or a campaign, or a
// near-copy of what the key's owner marked spam, which hold the message whatever the score. No I/O.
import type { SpamFilterLevel, SpamMark, SpamReason, SpamVerdict } from '../words/spam-kinds.ts';
import type { SpamScan } from './spam-filter.ts';
import { isCampaign, isOwnCopy, type CampaignVotes } from './spam-campaigns.ts';
import { REPUTATION_SYMBOLS } from './reputation.ts';

const TOGETHER_SYMBOL = REPUTATION_SYMBOLS.together;

/** The reason of a message held as a campaign, and the points it adds (more if the filter's score is below the level's). */
export const CAMPAIGN_SYMBOL = 'FORM_CAMPAIGN';
/** The reason of a message held as a near-copy of one the key's owner marked spam; the same points. */
export const OWN_COPY_SYMBOL = 'FORM_MARKED_COPY';
const CAMPAIGN_POINTS = 10;
/** The filter's reasons kept beside the campaign's: five in all, as the filter's alone. */
const FILTER_REASONS_WITH_CAMPAIGN = 4;

/** Whether the submission is checked: its key's level is not off, and no verdict stands (a re-send keeps it; the owner's "not spam" is final). */
export function awaitsSpamCheck(submission: { spamFilter: SpamFilterLevel; spamVerdict: SpamVerdict | null; spamMark: SpamMark | null }): boolean {
  return submission.spamFilter !== 'off' && submission.spamVerdict === null && submission.spamMark !== 'ham';
}

/** What held a message whatever its score: a campaign across owners, or a near-copy of the owner's own spam mark. */
export type HeldBy = 'campaign' | 'ownCopy';

/** The verdict, and the scan to record with it (a campaign's or near-copy's reason first when one held it). */
export type SpamDecision = { verdict: Extract<SpamVerdict, 'spam' | 'ham' | 'unchecked'>; scan: SpamScan | undefined; heldBy: HeldBy | undefined };

/**
 * `scan`: the filter's answer, undefined when it failed or was paused. `votes`: the campaign votes on
 * the message's text (src/shared/spam/spam-campaigns.ts), undefined when unknown. `threshold`: the
 * key's level's score from which a message is spam. The filter never costs mail: without its
 * answer, the email goes `unchecked`.
 */
export function decideSpam(scan: SpamScan | undefined, votes: CampaignVotes | undefined, threshold: number): SpamDecision {
  const heldBy = votes === undefined ? undefined : isCampaign(votes) ? 'campaign' : isOwnCopy(votes) ? 'ownCopy' : undefined;
  if (votes && heldBy) return { verdict: 'spam', scan: asHeld(scan, heldBy, votes, threshold), heldBy };
  if (scan === undefined) return { verdict: 'unchecked', scan, heldBy };
  return { verdict: scan.score >= threshold ? 'spam' : 'ham', scan, heldBy };
}

/** The reasons the filter shows at most (src/shared/spam/spam-filter.ts keeps as many). */
const MAX_REASONS = 5;

/**
 * The filter's answer with the reputation's reasons (./reputation.ts) added: their points to its
 * score, the reasons together strongest first. Without the filter's answer the listings alone
 * decide only when they agree (FORM_LISTED_TOGETHER): one listing is no verdict, and the email goes
 * `unchecked` as before.
 */
export function withReputation(scan: SpamScan | undefined, reputation: SpamReason[]): SpamScan | undefined {
  if (!reputation.length) return scan;
  if (!scan && !reputation.some((reason) => reason.symbol === TOGETHER_SYMBOL)) return undefined;
  const base = scan ?? { score: 0, reasons: [] };
  const points = reputation.reduce((sum, reason) => sum + reason.score, 0);
  const reasons = [...base.reasons, ...reputation].sort((a, b) => b.score - a.score).slice(0, MAX_REASONS);
  return { score: Math.round((base.score + points) * 100) / 100, reasons };
}

/** The filter's answer (undefined: none) with the campaign's or near-copy's reason first, its points lifting the score to at least the level's. */
function asHeld(scan: SpamScan | undefined, heldBy: HeldBy, votes: CampaignVotes, threshold: number): SpamScan {
  const base = scan?.score ?? 0;
  const points = Math.round(Math.max(CAMPAIGN_POINTS, threshold - base) * 100) / 100;
  const reason: SpamReason =
    heldBy === 'ownCopy'
      ? { symbol: OWN_COPY_SYMBOL, score: points, description: "near-identical to a message this key's owner marked spam" }
      : {
          symbol: CAMPAIGN_SYMBOL,
          score: points,
          description: votes.ownSpam
            ? `near-identical to messages marked spam by this key's owner and the owners of ${votes.otherMailboxes} other mailboxes`
            : `near-identical to messages marked spam by the owners of ${votes.otherMailboxes} other mailboxes`,
        };
  return { score: Math.round((base + points) * 100) / 100, reasons: [reason, ...(scan?.reasons ?? []).slice(0, FILTER_REASONS_WITH_CAMPAIGN)] };
}

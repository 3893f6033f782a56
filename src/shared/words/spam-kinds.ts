// The spam feature's words that other features' tables hold: a key's filter level, a submission's
// verdict, mark and reasons. A module of its own, importing nothing, so that those tables can name
// them without importing the spam feature's entities (which refer to theirs).

/** How a key's submissions are checked for spam: not at all, or marked spam from a lower score when strict (src/workers/spam/spam-check.ts). */
export const SPAM_FILTER_LEVELS = ['off', 'normal', 'strict'] as const;
export type SpamFilterLevel = (typeof SPAM_FILTER_LEVELS)[number];

/** The spam filter's verdict on a submission; `unchecked`: the filter was down or slow, and the email went out. */
export const SPAM_VERDICTS = ['ham', 'spam', 'unchecked'] as const;
export type SpamVerdict = (typeof SPAM_VERDICTS)[number];

/** The owner's mark on a submission, taught to the filter. */
export const SPAM_MARKS = ['ham', 'spam'] as const;
export type SpamMark = (typeof SPAM_MARKS)[number];

/** One reason of a spam verdict: the filter's rule, its share of the score, and what it means. */
export type SpamReason = { symbol: string; score: number; description?: string };

// The spam verdict on a submission before its email is sent: the filter's score against the key's
// level, a campaign or a near-copy of the owner's own spam mark that holds it whatever the score,
// and the filter never costing mail.
import { describe, expect, it } from 'vitest';
import { awaitsSpamCheck, CAMPAIGN_SYMBOL, decideSpam, OWN_COPY_SYMBOL } from '../../../src/shared/spam/verdict.ts';

/** The thresholds of SPAM_SCORE_NORMAL and SPAM_SCORE_STRICT by default. */
const NORMAL = 6;
const STRICT = 4;
const reasons = [
  { symbol: 'BAYES_SPAM', score: 4.1, description: 'Message probably spam, probability: 99%' },
  { symbol: 'FORM_LINKS', score: 1.5 },
  { symbol: 'R_SUSPICIOUS_URL', score: 0.5 },
  { symbol: 'FORM_SHOUTING', score: 0.3 },
  { symbol: 'MIME_HTML_ONLY', score: 0.2 },
];
const votes = { otherMailboxes: 3, spamDomains: 3, ownSpam: false, ownHam: false };

describe("the filter's score", () => {
  it("holds the submission as spam from the key level's threshold, and lets it through below", () => {
    const scan = { score: 6.4, reasons };
    expect(decideSpam(scan, undefined, NORMAL)).toEqual({ verdict: 'spam', scan, heldBy: undefined });
    expect(decideSpam({ score: 6, reasons }, undefined, NORMAL).verdict).toBe('spam');
    expect(decideSpam({ score: 5.99, reasons }, undefined, NORMAL).verdict).toBe('ham');
    expect(decideSpam({ score: 5.99, reasons }, undefined, STRICT).verdict).toBe('spam');
  });

  it('missing (the filter down, slow or paused) sends the email unchecked', () => {
    expect(decideSpam(undefined, undefined, NORMAL)).toEqual({ verdict: 'unchecked', scan: undefined, heldBy: undefined });
  });
});

describe('a campaign', () => {
  it("holds the submission whatever the filter's score, its reason first and at most four of the filter's after it", () => {
    const decided = decideSpam({ score: 1, reasons }, votes, NORMAL);
    expect(decided.verdict).toBe('spam');
    expect(decided.heldBy).toBe('campaign');
    expect(decided.scan!.score).toBe(11);
    expect(decided.scan!.reasons.map((reason) => reason.symbol)).toEqual([CAMPAIGN_SYMBOL, 'BAYES_SPAM', 'FORM_LINKS', 'R_SUSPICIOUS_URL', 'FORM_SHOUTING']);
    expect(decided.scan!.reasons[0]).toEqual({
      symbol: 'FORM_CAMPAIGN',
      score: 10,
      description: 'near-identical to messages marked spam by the owners of 3 other mailboxes',
    });
  });

  it("lifts the score to at least the level's threshold, however high it is set", () => {
    expect(decideSpam({ score: 1.25, reasons: [] }, votes, 30).scan).toMatchObject({ score: 30, reasons: [{ score: 28.75 }] });
  });

  it("holds the submission while the filter is down, and says when the key's own owner marked such a message spam", () => {
    const decided = decideSpam(undefined, { otherMailboxes: 2, spamDomains: 3, ownSpam: true, ownHam: false }, NORMAL);
    expect(decided).toMatchObject({ verdict: 'spam', heldBy: 'campaign', scan: { score: 10 } });
    expect(decided.scan!.reasons[0]!.description).toBe("near-identical to messages marked spam by this key's owner and the owners of 2 other mailboxes");
  });
});

describe("a near-copy of a message the key's owner marked spam", () => {
  const own = { otherMailboxes: 0, spamDomains: 1, ownSpam: true, ownHam: false };

  it("holds the submission whatever the filter's score, and says why", () => {
    const decided = decideSpam({ score: -3, reasons }, own, NORMAL);
    expect(decided).toMatchObject({ verdict: 'spam', heldBy: 'ownCopy', scan: { score: 7 } });
    expect(decided.scan!.reasons[0]).toEqual({ symbol: OWN_COPY_SYMBOL, score: 10, description: "near-identical to a message this key's owner marked spam" });
    expect(decideSpam(undefined, own, STRICT)).toMatchObject({ verdict: 'spam', heldBy: 'ownCopy', scan: { score: 10 } });
  });

  it('holds nothing once the owner marked a near-copy not spam, nor for another owner whose marks are not enough for a campaign', () => {
    expect(decideSpam({ score: 1, reasons }, { ...own, ownHam: true }, NORMAL)).toMatchObject({ verdict: 'ham', heldBy: undefined });
    expect(decideSpam({ score: 1, reasons }, { otherMailboxes: 2, spamDomains: 2, ownSpam: false, ownHam: false }, NORMAL).verdict).toBe('ham');
  });

  it('is held as a campaign when enough other owners marked it too', () => {
    expect(decideSpam({ score: 1, reasons }, { ...own, otherMailboxes: 2, spamDomains: 3 }, NORMAL).heldBy).toBe('campaign');
  });
});

describe('a submission', () => {
  const unchecked = { spamFilter: 'normal', spamVerdict: null, spamMark: null } as const;

  it("is checked when its key's level is not off and no verdict stands", () => {
    expect(awaitsSpamCheck(unchecked)).toBe(true);
    expect(awaitsSpamCheck({ ...unchecked, spamFilter: 'strict', spamMark: 'spam' })).toBe(true);
  });

  it('is not checked when its key turned the filter off', () => {
    expect(awaitsSpamCheck({ ...unchecked, spamFilter: 'off' })).toBe(false);
  });

  it('is not checked again once re-sent with a verdict, nor after its owner said it is not spam', () => {
    expect(awaitsSpamCheck({ ...unchecked, spamVerdict: 'ham' })).toBe(false);
    expect(awaitsSpamCheck({ ...unchecked, spamVerdict: 'unchecked' })).toBe(false);
    expect(awaitsSpamCheck({ ...unchecked, spamMark: 'ham' })).toBe(false);
  });
});

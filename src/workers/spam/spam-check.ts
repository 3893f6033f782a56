// The spam check of a submission before its email is sent: the filter's score against the key's
// level decides whether the email is sent or the submission is held as `spam` (kept, shown in the
// owner's Spam view, sent when the owner says it is not spam). A held one is written at once; any
// other verdict rides on the `sent` write (recordSent), so an attempt that fails is checked again
// on the next one. The same check runs in a webhook's worker when the email is held up
// (src/workers/webhooks/webhook-spam-check.ts): one per worker process, its limits shared.
// The filter never costs mail: down, slow (SPAM_CHECK_TIMEOUT_MS) or answering nonsense, the
// email is sent and the submission marked `unchecked`. After FAILURES_TO_PAUSE failures in a row,
// checks pause for PAUSE_MS, so that a filter that hangs does not add its timeout to every email.
// A filter that is alive but busy must not count as slow: a burst would then go out unchecked.
// So each worker sends at most SPAM_CHECKS_IN_FLIGHT checks at once, the rest wait their turn here
// (delivery slows down, nothing skips the check), and the timeout runs from when a check is sent.
// Alongside the filter's check, one indexed query asks whether owners of CAMPAIGN_MAILBOXES
// mailboxes marked a near-identical message spam (../../shared/spam/spam-campaigns.ts): such a campaign is
// held whatever the filter's score, with the reason FORM_CAMPAIGN; so is, for the key's own owner, a
// near-copy of what they marked spam and never not spam (FORM_MARKED_COPY). That query failing
// costs nothing but those verdicts: the filter's stands.
// Alongside too, the blocklist lookups and the disposable-address check (../../shared/spam/reputation.ts),
// bounded by SPAM_DNS_TIMEOUT_MS: their reasons add to the filter's score; a lookup that fails or
// does not answer in time adds nothing. A check writes nothing but its verdict: no vote, no
// learning, so a submission checked on both sides is counted nowhere twice.
import type { EntityManager } from '@mikro-orm/postgresql';
import pLimit from 'p-limit';
import { campaignFingerprint } from '../../shared/spam/campaign-fingerprint.ts';
import type { SpamFilterLevel, SpamReason } from '../../shared/words/spam-kinds.ts';
import { recordSpamVerdict, type ClaimedSubmission, type ClaimToken, type SpamResult } from '../../shared/deliveries/deliveries.ts';
import type { Logger } from '../../shared/infra/log.ts';
import { spamCheckDuration, spamChecks } from '../../shared/infra/metrics.ts';
import { campaignVotes, type CampaignVotes } from '../../shared/spam/spam-campaigns.ts';
import type { SpamFilter, SpamSample, SpamScan } from '../../shared/spam/spam-filter.ts';
import { spamSampleOf, type CheckedSubmission } from '../../shared/spam/samples.ts';
import { awaitsSpamCheck, decideSpam, withReputation, type SpamDecision } from '../../shared/spam/verdict.ts';
import { createReputationCheck, type ReputationCheck } from '../../shared/spam/reputation.ts';
import type { Config } from '../../shared/infra/config.ts';
import { logLostClaim } from '../delivery/claim-check.ts';

const FAILURES_TO_PAUSE = 5;
const PAUSE_MS = 30_000;

export type SpamCheckSettings = {
  /** Unset: no filter configured (or SPAM_FILTER=off): nothing is checked. */
  filter: SpamFilter | undefined;
  timeoutMs: number;
  /** Checks this worker has sent and not had answered, at most; more wait their turn. */
  inFlight: number;
  /** The score from which a submission is spam, by key level. */
  thresholds: Record<Exclude<SpamFilterLevel, 'off'>, number>;
  mailFrom: string;
  /** Unset: no blocklist zones named and disposable addresses not looked for. */
  reputation?: ReputationCheck | undefined;
};

/** Thrown instead of sending: the submission is now `spam`. */
export class HeldAsSpamError extends Error {
  override name = 'HeldAsSpamError';
}

/**
 * The verdict on a submission, written nowhere; undefined when it is not checked (no filter, its
 * key's level off, a verdict already stored, or its owner's "not spam").
 */
export type SpamVerdicts = (em: EntityManager, submission: CheckedSubmission, filenames: string[], log: Logger) => Promise<SpamDecision | undefined>;

/**
 * Throws HeldAsSpamError, or answers the verdict to record with `sent` (undefined: not checked, the
 * filter is off). `claim`: the worker's, under which a `spam` verdict is written.
 */
export type SpamChecker = (
  em: EntityManager,
  submission: ClaimedSubmission,
  claim: ClaimToken,
  filenames: string[],
  log: Logger,
) => Promise<SpamResult | undefined>;

/** The email's check: a `spam` verdict is written under the email's claim, and nothing is sent. */
export function createSpamChecker(verdicts: SpamVerdicts): SpamChecker {
  return async (em, submission, claim, filenames, log) => {
    const decided = await verdicts(em, submission, filenames, log);
    if (!decided) return undefined;
    const { verdict, scan } = decided;
    if (verdict === 'spam') {
      // Not sent either way; another worker's claim has its own verdict to write.
      if (!(await recordSpamVerdict(em, submission.id, claim, verdict, scan)))
        logLostClaim(log, 'submission', submission.id, 'held as spam, its verdict not recorded');
      throw new HeldAsSpamError(`held as spam (score ${scan?.score}, ${submission.spamFilter} level)`);
    }
    return { verdict, score: scan?.score ?? null, reasons: scan?.reasons ?? null };
  };
}

/** The check of a worker process, from its configuration: its email and webhook workers share it. */
export function spamVerdictsFromConfig(config: Config, filter: SpamFilter | undefined): SpamVerdicts {
  return createSpamVerdicts({
    filter,
    timeoutMs: config.SPAM_CHECK_TIMEOUT_MS,
    inFlight: config.SPAM_CHECKS_IN_FLIGHT,
    thresholds: { normal: config.SPAM_SCORE_NORMAL, strict: config.SPAM_SCORE_STRICT },
    mailFrom: config.MAIL_FROM,
    // Part of the spam check: without a filter, nothing is checked (and the disposable list, about
    // 17 MB, is not read).
    reputation: filter
      ? createReputationCheck({
          ipZones: config.SPAM_DNSBL_ZONES,
          domainZones: config.SPAM_URIBL_ZONES,
          servers: config.SPAM_DNS_SERVERS,
          timeoutMs: config.SPAM_DNS_TIMEOUT_MS,
          disposable: config.SPAM_DISPOSABLE_EMAIL,
        })
      : undefined,
  });
}

export function createSpamVerdicts(settings: SpamCheckSettings): SpamVerdicts {
  let failuresInARow = 0;
  let pausedUntil = 0;
  const turn = pLimit(settings.inFlight);

  /** Sends one check (unless checks were paused while it waited its turn), counting failures in a row. */
  async function checkNow(filter: SpamFilter, sample: SpamSample, log: Logger): Promise<SpamScan | undefined> {
    if (Date.now() < pausedUntil) return undefined;
    try {
      const answer = await filter.check(sample, settings.timeoutMs);
      failuresInARow = 0;
      return answer;
    } catch (error) {
      failuresInARow += 1;
      if (failuresInARow >= FAILURES_TO_PAUSE) {
        pausedUntil = Date.now() + PAUSE_MS;
        failuresInARow = 0;
        log.warn({ pauseMs: PAUSE_MS }, 'the spam filter failed repeatedly: emails go out unchecked for a while');
      }
      throw error;
    }
  }

  return async (em, submission, filenames, log) => {
    const { filter } = settings;
    const level = submission.spamFilter;
    // A verdict already recorded (a re-send) stands; the owner's "not spam" is final.
    if (!filter || level === 'off' || !awaitsSpamCheck(submission)) return undefined;
    // Asked at once, answered while the filter checks: no wait of its own.
    const campaign = campaignCheck(em, submission, log);
    const reputation = reputationCheck(settings.reputation, submission, log);
    let scan: SpamScan | undefined;
    if (Date.now() >= pausedUntil) {
      const started = performance.now();
      try {
        scan = await turn(() => checkNow(filter, spamSampleOf(submission, filenames, settings.mailFrom), log));
      } catch (error) {
        // The filter's answer (or its absence) is the cause; a stack trace would only say where we asked.
        const cause = error instanceof Error ? error.message : String(error);
        log.warn({ submissionId: submission.id, cause }, `spam check failed (${cause}): the email is sent unchecked`);
      } finally {
        // The email's wait for its verdict, its turn included.
        spamCheckDuration.observe((performance.now() - started) / 1000);
      }
    }
    const votes = await campaign;
    scan = withReputation(scan, await reputation);
    const decided = decideSpam(scan, votes, settings.thresholds[level]);
    spamChecks.inc({ verdict: decided.verdict });
    if (decided.verdict === 'spam') log.info({ submissionId: submission.id, score: decided.scan?.score, level, heldBy: decided.heldBy }, 'held as spam');
    return decided;
  };
}

/** The campaign votes on the submission's text; undefined when it is too short to tell, or the query failed. */
async function campaignCheck(em: EntityManager, submission: CheckedSubmission, log: Logger): Promise<CampaignVotes | undefined> {
  const fingerprint = campaignFingerprint(submission.message);
  if (!fingerprint || !submission.keyMailbox) return undefined;
  try {
    return await campaignVotes(em, submission.keyMailbox, fingerprint);
  } catch (error) {
    log.warn({ err: error, submissionId: submission.id }, "spam campaign check failed: the filter's verdict stands");
    return undefined;
  }
}

/** The reputation's reasons; none when it is not configured or failed (its lookups time out on their own). */
async function reputationCheck(check: ReputationCheck | undefined, submission: CheckedSubmission, log: Logger): Promise<SpamReason[]> {
  if (!check) return [];
  try {
    const texts = [submission.subject, submission.message, ...submission.customFields.map(([, value]) => value)];
    return await check({ ip: submission.clientIp, email: submission.email, texts });
  } catch (error) {
    log.warn({ err: error, submissionId: submission.id }, "spam reputation check failed: the filter's verdict stands");
    return [];
  }
}

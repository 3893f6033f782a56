// A starting worker takes no job until the spam filter answers a check within the check timeout:
// rspamd that has just started (npm start, a restart, a new container) may answer /ping while it
// still loads its rules, and every email checked then would time out and go out unchecked. The
// wait is bounded (SPAM_FILTER_START_WAIT_MS); past it the filter's documented fail-open holds:
// the worker runs, and emails go out unchecked while the filter does not answer.
import { setTimeout } from 'node:timers/promises';
import type { Logger } from '../../shared/infra/log.ts';
import type { SpamFilter, SpamSample } from '../../shared/spam/spam-filter.ts';

/** A check of its own, never learned from: it reaches the same rules a submission's check does. */
const READY_SAMPLE: SpamSample = {
  mailFrom: 'Contact Form <forms@localhost>',
  ownerEmail: 'owner@localhost',
  ownerMailbox: 'owner@localhost',
  visitorEmail: 'visitor@localhost',
  subject: 'Start check',
  message: 'Is the spam filter answering?',
  customFields: [],
  filenames: [],
  ownerStatistics: false,
};

const PAUSE_MS = 250;

/** Resolves once the filter answers a check within `timeoutMs`, or when `waitMs` has passed (then one WARN line). */
export async function waitForSpamFilter(filter: SpamFilter, timeoutMs: number, waitMs: number, log: Logger): Promise<boolean> {
  const started = Date.now();
  let cause: string | undefined;
  do {
    try {
      await filter.check(READY_SAMPLE, timeoutMs);
      if (cause !== undefined) log.info({ waitedMs: Date.now() - started }, 'the spam filter answers: taking jobs');
      return true;
    } catch (error) {
      if (cause === undefined) log.info(`waiting for the spam filter to answer before taking jobs (at most ${Math.round(waitMs / 1000)} s)`);
      cause = error instanceof Error ? error.message : String(error);
    }
    await setTimeout(PAUSE_MS);
  } while (Date.now() - started < waitMs);
  log.warn(
    `the spam filter did not answer within ${Math.round(waitMs / 1000)} s of the start (${cause}): taking jobs anyway; emails go out unchecked while it does not answer (SPAM_FILTER_URL)`,
  );
  return false;
}

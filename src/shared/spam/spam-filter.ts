// The spam filter, rspamd over HTTP: the workers ask it for a score before a submission's email
// is sent (the scanner, POST /checkv2), and the owners' marks teach it (the controller, POST
// /learnspam and /learnham). Each request names the owner's mailbox in Deliver-To: rspamd keeps
// one set of statistics that every owner teaches and one per owner (rspamd/override.d/statistic.conf).
import { isIP } from 'node:net';
import type { Config } from '../infra/config.ts';
import type { CustomFields } from '../submissions/entities.ts';
import type { SpamMark, SpamReason } from '../words/spam-kinds.ts';
import { postOnce } from '../infra/one-shot-http.ts';
import { defaultSubject } from '../submissions/submissions.ts';

/** What the filter reads of a submission: the content of its email, without the files themselves. */
export type SpamSample = {
  mailFrom: string;
  /** The owner's address (To) and mailbox (whose own statistics apply). */
  ownerEmail: string;
  ownerMailbox: string;
  visitorEmail: string;
  subject: string;
  message: string;
  customFields: CustomFields;
  filenames: string[];
  /**
   * For a check: false when the owner has taught too few marks for their own statistics to count
   * (fewer than OWNER_MIN_LEARNS of a kind): rspamd could not use them, and the check skips them.
   */
  ownerStatistics?: boolean;
  /**
   * For a check: the visitor's address, sent as rspamd's `IP` header (the message itself has no
   * Received line), for an operator's own IP rules. The service's blocklist lookups are its own
   * (./reputation.ts); the form profile runs none of rspamd's.
   */
  visitorIp?: string;
};

/**
 * The marks of each kind an owner's own statistics need before they count: `min_learns` of the
 * "owner" classifier in rspamd/override.d/statistic.conf.
 */
export const OWNER_MIN_LEARNS = 5;

export type SpamScan = { score: number; reasons: SpamReason[] };

export type SpamFilter = {
  /** The score of a message; throws when the filter is down, slow (past `timeoutMs`) or answers nonsense. */
  check: (sample: SpamSample, timeoutMs: number) => Promise<SpamScan>;
  /** Teaches a message as spam or ham; `known`: nothing to learn (learned before, or too short). Throws when it cannot. */
  learn: (sample: SpamSample, mark: SpamMark, timeoutMs: number) => Promise<'taught' | 'known'>;
};

export type SpamFilterSettings = { scanUrl: string; controllerUrl: string; password: string | undefined };

/** The reasons shown to the owner: the rules that pushed the score up, strongest first. */
const MAX_REASONS = 5;

export function createSpamFilter(settings: SpamFilterSettings): SpamFilter {
  const headers = (sample: SpamSample) => ({
    'Deliver-To': sample.ownerMailbox,
    ...(settings.password ? { Password: settings.password } : {}),
  });
  const [scanner, controller] = [new URL(settings.scanUrl), new URL(settings.controllerUrl)];
  return {
    async check(sample, timeoutMs) {
      // The service's profiles (rspamd/local.d/settings.conf): Bayes and the form rules, not the
      // SMTP-session rules; without the owner's own statistics while they are too few to count,
      // which saves rspamd a quarter of its work on the check of most owners.
      const profile = sample.ownerStatistics === false ? 'form-shared' : 'form';
      const ip: Record<string, string> = sample.visitorIp && isIP(sample.visitorIp) ? { IP: sample.visitorIp } : {};
      const answer = await postOnce(scanner, '/checkv2', { ...headers(sample), ...ip, 'Settings-ID': profile }, sampleMessage(sample), timeoutMs);
      if (answer.status !== 200) throw new Error(`the spam filter answered ${answer.status}`);
      return readScan(JSON.parse(answer.body));
    },
    async learn(sample, mark, timeoutMs) {
      // Learn-Type bulk: every mark is learned, also one the filter already puts in that class
      // (rspamd otherwise learns only its mistakes); with few marks each one counts
      // (docs/benchmarks.md#the-spam-filter).
      const path = mark === 'spam' ? '/learnspam' : '/learnham';
      const answer = await postOnce(controller, path, { ...headers(sample), 'Learn-Type': 'bulk' }, sampleMessage(sample), timeoutMs);
      if (answer.status === 200) return 'taught';
      const text = answer.body.slice(0, 300);
      // Nothing to learn: rspamd learned this very message before (an error naming that), or it
      // is too short to learn from (204).
      if (answer.status === 204 || /already in class|already learned/i.test(text)) return 'known';
      throw new Error(`the spam filter answered ${answer.status}: ${text}`);
    },
  };
}

/**
 * The message as the filter reads it: the email's headers and text (longer numbers by their length
 * only), the files by name only. Built here rather than by nodemailer's composer, which cost the
 * worker about as much as the check.
 *
 * Without the subject the service gives a submission that came without one: it says nothing of the
 * message, and Bayes reads a subject's words: in every check and mark, with the visitor's address
 * in it, it made every message look alike and held less spam (docs/benchmarks.md).
 */
export function sampleMessage(sample: SpamSample): Buffer {
  const subject = sample.subject === defaultSubject(sample.visitorEmail) ? '' : sample.subject;
  const lines = [
    ...sample.customFields.map(([name, value]) => `${name}: ${digitsAsZeros(value)}`),
    ...(sample.customFields.length ? [''] : []),
    digitsAsZeros(sample.message),
    ...(sample.filenames.length ? ['', 'Files:', ...sample.filenames.map((name) => `- ${name}`)] : []),
  ];
  const head = [
    header('From', sample.mailFrom),
    header('To', sample.ownerEmail),
    header('Reply-To', sample.visitorEmail),
    header('Subject', digitsAsZeros(subject)),
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=utf-8',
    'Content-Transfer-Encoding: 8bit',
  ];
  return Buffer.from(`${head.join('\r\n')}\r\n\r\n${lines.join('\n').replace(/\r?\n|\r/g, '\r\n')}\r\n`, 'utf8');
}

/** One header line: on one line whatever the value holds, and as an RFC 2047 word when it is not ASCII. */
function header(name: string, value: string): string {
  const flat = value.replace(/[\r\n]+/g, ' ');
  return `${name}: ${/^[\x20-\x7e]*$/.test(flat) ? flat : `=?UTF-8?B?${Buffer.from(flat, 'utf8').toString('base64')}?=`}`;
}

/** The filter's JSON answer: its score and its strongest reasons; throws when it has no score. */
export function readScan(answer: unknown): SpamScan {
  const { score, symbols } = answer as { score?: unknown; symbols?: Record<string, { score?: unknown; description?: unknown }> };
  if (typeof score !== 'number' || !Number.isFinite(score)) throw new Error('the spam filter answered without a score');
  const reasons = Object.entries(symbols ?? {})
    .map(([symbol, detail]) => ({
      symbol,
      score: typeof detail.score === 'number' ? Math.round(detail.score * 100) / 100 : 0,
      ...(typeof detail.description === 'string' ? { description: detail.description } : {}),
    }))
    .filter((reason) => reason.score > 0)
    .sort((a, b) => b.score - a.score)
    .slice(0, MAX_REASONS);
  return { score: Math.round(score * 100) / 100, reasons };
}

/** The configured filter; undefined when SPAM_FILTER=off or no rspamd is named. */
export function spamFilterFromConfig(
  config: Pick<Config, 'SPAM_FILTER' | 'SPAM_FILTER_URL' | 'SPAM_FILTER_CONTROLLER_URL' | 'SPAM_FILTER_PASSWORD'>,
): SpamFilter | undefined {
  if (config.SPAM_FILTER === 'off' || !config.SPAM_FILTER_URL || !config.SPAM_FILTER_CONTROLLER_URL) return undefined;
  return createSpamFilter({ scanUrl: config.SPAM_FILTER_URL, controllerUrl: config.SPAM_FILTER_CONTROLLER_URL, password: config.SPAM_FILTER_PASSWORD });
}

/**
 * A number of 3 digits or more as its length only (each digit a 0), in checks and in marks alike:
 * one phone number, short code or price differs from the next, so Bayes learns nothing from its
 * digits, while the words it stands among, with a number of that length, recur. Shorter numbers
 * stay as written: in a form message they are quantities, times and text speak ("2day"); turning
 * them into zeros too held more ham (docs/benchmarks.md).
 */
const digitsAsZeros = (text: string) => text.replace(/\d{3,}/g, (run) => '0'.repeat(run.length));

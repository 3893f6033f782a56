// The spam filter, rspamd over HTTP: the workers ask it for a score before a submission's email
// is sent (the scanner, POST /checkv2), and the owners' marks teach it (the controller, POST
// /learnspam and /learnham). Each request names the owner's mailbox in Deliver-To: rspamd keeps
// one set of statistics that every owner teaches and one per owner (rspamd/override.d/statistic.conf).
import MailComposer from 'nodemailer/lib/mail-composer/index.js';
import type { Config } from './config.ts';
import type { CustomFields, SpamMark, SpamReason } from './db/entities.ts';

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
};

export type SpamScan = { score: number; reasons: SpamReason[] };

export type SpamFilter = {
  /** The score of a message; throws when the filter is down, slow (past `timeoutMs`) or answers nonsense. */
  check: (sample: SpamSample, timeoutMs: number) => Promise<SpamScan>;
  /** Teaches a message as spam or ham; `known`: the filter had it in that class already. Throws when it cannot. */
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
  return {
    async check(sample, timeoutMs) {
      const body = await sampleMessage(sample);
      const response = await fetch(new URL('/checkv2', settings.scanUrl), {
        method: 'POST',
        // The service's profile (rspamd/local.d/settings.conf): Bayes and the form rules, not the SMTP-session rules.
        headers: { ...headers(sample), 'Settings-ID': 'form' },
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (!response.ok) throw new Error(`the spam filter answered ${response.status}`);
      return readScan(await response.json());
    },
    async learn(sample, mark, timeoutMs) {
      const body = await sampleMessage(sample);
      const response = await fetch(new URL(mark === 'spam' ? '/learnspam' : '/learnham', settings.controllerUrl), {
        method: 'POST',
        headers: headers(sample),
        body,
        signal: AbortSignal.timeout(timeoutMs),
      });
      if (response.ok) return 'taught';
      const answer = (await response.text()).slice(0, 300);
      // rspamd refuses a message it already classifies in that class, or learned before.
      if (/already in class|already learned/i.test(answer)) return 'known';
      throw new Error(`the spam filter answered ${response.status}: ${answer}`);
    },
  };
}

/** The message as the filter reads it: the email's headers and text, the files by name only. */
export async function sampleMessage(sample: SpamSample): Promise<Buffer> {
  const lines = [
    ...sample.customFields.map(([name, value]) => `${name}: ${value}`),
    ...(sample.customFields.length ? [''] : []),
    sample.message,
    ...(sample.filenames.length ? ['', 'Files:', ...sample.filenames.map((name) => `- ${name}`)] : []),
  ];
  return new MailComposer({
    from: sample.mailFrom,
    to: sample.ownerEmail,
    replyTo: sample.visitorEmail,
    subject: sample.subject,
    text: lines.join('\n'),
  })
    .compile()
    .build();
}

function readScan(answer: unknown): SpamScan {
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

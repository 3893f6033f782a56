// `npm run bench:spam-corpus -- --spam <dir>[,<dir>…] --ham <dir>[,<dir>…]`: how well the spam filter
// separates email-shaped messages (scenario 9 of npm run bench uses short ones). Each file in the
// directories is a raw email, as in the SpamAssassin public corpus; its subject and text become a
// form submission (mailing-list footers and subject tags removed: a form has none). A throwaway
// rspamd with this repository's configuration learns 200 of each kind as one owner's marks, then
// checks 1,000 spam and 2,000 ham never taught, for that owner and for another owner's key.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { simpleParser } from 'mailparser';
import { startRspamd } from '../src/local/rspamd.ts';
import { createSpamFilter, type SpamSample } from '../src/shared/spam-filter.ts';

const TAUGHT = 200;
const TESTED = { spam: 1_000, ham: 2_000 };
const LEVELS = { normal: 6, strict: 4 };
const TEACHER = 'teacher@example.test';
const OTHER = 'other@example.test';

const { values } = parseArgs({ options: { spam: { type: 'string' }, ham: { type: 'string' } } });
if (!values.spam || !values.ham) {
  process.stderr.write('Usage: npm run bench:spam-corpus -- --spam <dir>[,<dir>…] --ham <dir>[,<dir>…]\n');
  process.exit(2);
}

type Message = { subject: string; text: string };

async function readMessages(directories: string): Promise<Message[]> {
  const messages: Message[] = [];
  for (const directory of directories.split(',')) {
    for (const name of readdirSync(directory).sort()) {
      if (name.endsWith('.json') || name === 'cmds') continue;
      const mail = await simpleParser(readFileSync(path.join(directory, name)));
      const text = withoutListFooter((mail.text ?? '').replace(/\r/g, '')).slice(0, 10_000);
      const subject = (mail.subject ?? '').replace(/^(\s*\[[^\]]{1,30}\]\s*)+/, '').replace(/[\r\n]+/g, ' ').slice(0, 200);
      if (text) messages.push({ subject, text });
    }
  }
  return shuffled(messages);
}

/** The text up to a mailing list's footer, looked for in its last 2,000 characters. */
function withoutListFooter(text: string): string {
  const tailStart = Math.max(0, text.length - 2_000);
  const footer = text.slice(tailStart).search(/^.*(sf\.net email is sponsored|mailing list|Yahoo! Groups|unsubscribe|listinfo|Irish Linux Users|xent\.com).*$/im);
  return (footer < 0 ? text : text.slice(0, tailStart + footer)).replace(/[-_=\s]+$/, '').trim();
}

/** A fixed order (the same split on every run). */
function shuffled<T>(items: T[]): T[] {
  let state = 20_261_125;
  const random = () => (state = (state * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  for (let index = items.length - 1; index > 0; index -= 1) {
    const other = Math.floor(random() * (index + 1));
    [items[index], items[other]] = [items[other]!, items[index]!];
  }
  return items;
}

const sample = (message: Message, owner: string): SpamSample => ({
  mailFrom: 'Contact Form <forms@corpus.test>',
  ownerEmail: owner,
  ownerMailbox: owner,
  visitorEmail: 'visitor@example.org',
  subject: message.subject,
  message: message.text,
  customFields: [],
  filenames: [],
});

const spam = await readMessages(values.spam);
const ham = await readMessages(values.ham);
const rspamd = await startRspamd();
try {
  const filter = createSpamFilter({ scanUrl: rspamd.url, controllerUrl: rspamd.controllerUrl, password: rspamd.password });
  for (let index = 0; index < TAUGHT; index += 1) {
    await filter.learn(sample(spam[index]!, TEACHER), 'spam', 20_000);
    await filter.learn(sample(ham[index]!, TEACHER), 'ham', 20_000);
  }
  const scores = async (messages: Message[], owner: string) => {
    const result: number[] = [];
    for (const message of messages) result.push((await filter.check(sample(message, owner), 20_000)).score);
    return result;
  };
  const held = (list: number[], level: number) => `${((list.filter((score) => score >= level).length / list.length) * 100).toFixed(1)} %`;
  const [testSpam, testHam] = [spam.slice(TAUGHT, TAUGHT + TESTED.spam), ham.slice(TAUGHT, TAUGHT + TESTED.ham)];
  console.log(`${TAUGHT} + ${TAUGHT} marks taught; ${testSpam.length} spam and ${testHam.length} ham never taught. Spam held / ham held:`);
  for (const [who, owner] of [['the teaching owner', TEACHER], ["another owner's key", OTHER]] as const) {
    const [spamScores, hamScores] = [await scores(testSpam, owner), await scores(testHam, owner)];
    for (const [level, from] of Object.entries(LEVELS)) console.log(`  ${who}, ${level}: ${held(spamScores, from)} / ${held(hamScores, from)}`);
  }
} finally {
  await rspamd.stop();
}

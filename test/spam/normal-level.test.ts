// What holds a submission at the normal level, against a real rspamd: an owner's own marks, and
// neither links nor everyone's marks, alone or together. One owner's marks of plumbing spam must not
// hold another owner's plumbing customer who attaches photos; newsletters and reading lists paste
// many links too.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { signIn, type OwnerClient } from '../support/owner.ts';
import { settledRecord, spamFilterEnv, startSpamFilter, submitTo, teachByMarks } from '../support/spam-filter.ts';

const TOKEN = 'normal-level-admin-token-0123456789';

let filter: RspamdService;
let h: Harness;

beforeAll(async () => {
  filter = await startSpamFilter();
  h = await startHarness({ env: { ...spamFilterEnv(filter), ADMIN_TOKEN: TOKEN, SPAM_TEACH_PER_KEY_PER_HOUR: '200' } });
}, 90_000);
afterAll(async () => {
  await h?.stop();
  await filter?.stop();
});

const settled = (id: string) => settledRecord(h, TOKEN, id);
const symbols = (record: { spam: { reasons: Array<{ symbol: string }> } }) => record.spam.reasons.map((reason) => reason.symbol);
const scoreOf = (record: { spam: { reasons: Array<{ symbol: string; score: number }> } }, symbol: string) =>
  record.spam.reasons.find((reason) => reason.symbol === symbol)?.score ?? 0;

const PLUMBING =
  'plumbing plumber boiler pipe pipes leak leaking drain radiator valve heating bathroom kitchen sink shower heater water pressure installation repair'.split(
    ' ',
  );
const PITCH = 'cheap leads guaranteed ranking customers promotion discount offer agency boost'.split(' ');
const BUSINESS = 'question pricing invoice meeting schedule appointment booking account contract office delivery order team support project'.split(' ');
const COMMON = 'the a we you your our to for and of in on with is are this that please can'.split(' ');

/** A message of 50 words, mostly from `words`; `seed` makes it differ, the same seed gives the same text. */
function message(words: string[], seed: number, others = COMMON): string {
  let state = seed * 7919 + words.length;
  const next = () => (state = (state * 1_103_515_245 + 12_345) % 2_147_483_648) / 2_147_483_648;
  const pick = (list: string[]) => list[Math.floor(next() * list.length)]!;
  return Array.from({ length: 50 }, () => pick(next() < 0.6 ? words : others)).join(' ');
}

/** Spam full of plumbing words, as a plumbing firm's form gets it. */
const plumbingSpam = (seed: number) => message(PLUMBING, seed, [...PITCH, ...COMMON]);

const photos = (count: number) => Array.from({ length: count }, (_, i) => `https://photos.example.net/job-${i + 1}.jpg`).join(' ');

describe('the normal level', () => {
  it('sends a message with many links and nothing else spammy, for a key whose owner taught nothing', async () => {
    const key = await h.createKey();
    const readingList = `Hello, these are the articles I mentioned at the workshop: ${Array.from({ length: 12 }, (_, i) => `https://journal${i}.example.org/article`).join(' ')} Best regards, Ana`;
    const record = await settled(await submitTo(h, key, { subject: 'Reading list', message: readingList }));
    expect(record.email_status).toBe('sent');
    expect(record.spam.verdict).toBe('ham');
    expect(record.spam.reasons[0].symbol).toBe('FORM_LINK_FARM');
    expect(record.spam.score).toBeLessThan(h.config.SPAM_SCORE_NORMAL);
  });

  describe("after one owner's marks of plumbing spam", () => {
    let teacher: TestKey;
    let teacherOwner: OwnerClient;

    beforeAll(async () => {
      teacher = await h.createKey();
      teacherOwner = await signIn(h, teacher.email);
      const seeds = Array.from({ length: 60 }, (_, n) => n + 1);
      await teachByMarks(h, teacher, teacherOwner, { spam: seeds.map(plumbingSpam), ham: seeds.slice(0, 25).map((seed) => message(BUSINESS, seed)) });
    }, 180_000);

    it("sends another owner's plumbing quote request with 4 photo links, which everyone's marks call spam", async () => {
      const other = await h.createKey();
      const request =
        'Hello, could you send me a quote for replacing the boiler in our kitchen and fixing a leaking pipe under the bathroom sink? ' +
        `The water pressure in the shower is low too. Photos of the boiler, the pipe, the sink and the shower: ${photos(4)}`;
      const record = await settled(await submitTo(h, other, { subject: 'Quote for a boiler and a leak', message: request }));
      // Everyone's statistics lean to spam, and the links rule fires: together they do not hold it.
      expect(symbols(record)).toEqual(expect.arrayContaining(['BAYES_SPAM', 'FORM_MANY_LINKS']));
      expect(scoreOf(record, 'BAYES_SPAM')).toBeGreaterThan(2);
      expect(record.email_status).toBe('sent');
      expect(record.spam.verdict).toBe('ham');
    });

    it("holds spam like what the owner marked for that owner's key, and not that owner's message of many links", async () => {
      const held = await settled(await submitTo(h, teacher, { message: plumbingSpam(500) }));
      expect(held.email_status).toBe('spam');
      expect(held.spam.reasons[0].symbol).toBe('BAYES_OWNER_SPAM');
      const newsletter = `Our spring newsletter: ${Array.from({ length: 12 }, (_, i) => `https://news.example.com/spring/story-${i}`).join(' ')} Unsubscribe any time.`;
      const sent = await settled(await submitTo(h, teacher, { subject: 'Spring newsletter', message: newsletter }));
      expect(sent.email_status).toBe('sent');
      expect(symbols(sent)).toContain('FORM_LINK_FARM');
    });
  });
});

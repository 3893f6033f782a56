// A real rspamd for a test file: its own instance and statistics (what one file teaches never
// changes another's verdicts), with the project's configuration. The global setup finds or
// installs rspamd; the compiled rules are shared, so an instance starts in about a second.
import { expect, inject } from 'vitest';
import { startRspamd, type RspamdOptions, type RspamdService } from '../../src/local/rspamd.ts';
import { adminRequest, submitJson } from './client.ts';
import { eventually, type Harness, type TestKey } from './harness.ts';
import type { OwnerClient } from './owner.ts';

export async function startSpamFilter(options: RspamdOptions = {}): Promise<RspamdService> {
  const found = inject('testTools').rspamd!;
  if (found.problem !== undefined) throw new Error(found.problem);
  return startRspamd(options);
}

/**
 * The harness settings that point the workers and the API at `filter`. These tests judge verdicts,
 * so a check may take its time: on a busy machine one can exceed the 500 ms default and the email
 * would go out unchecked. The tests of that timeout set their own.
 */
export const spamFilterEnv = (filter: RspamdService) => ({
  SPAM_FILTER_URL: filter.url,
  SPAM_FILTER_CONTROLLER_URL: filter.controllerUrl,
  SPAM_FILTER_PASSWORD: filter.password,
  SPAM_CHECK_TIMEOUT_MS: '10000',
});

const SPAM_WORDS =
  'seo backlinks ranking guaranteed traffic casino bonus crypto investment profit bitcoin cheap pills discount promotion agency leads boost unlimited loan approved winner'.split(
    ' ',
  );
const HAM_WORDS =
  'question pricing plan team support order delivery invoice meeting schedule appointment product feature account booking quote project contract office phone'.split(
    ' ',
  );
const COMMON = 'the a we you your our to for and of in on with is are this that please can would like'.split(' ');

/** A form message in the vocabulary of spam or of ordinary business mail; `seed` makes it differ, the same seed gives the same text. */
export function formMessage(kind: 'spam' | 'ham', seed: number): { subject: string; message: string } {
  let state = seed * 7919 + (kind === 'spam' ? 17 : 29);
  const next = () => (state = (state * 1103515245 + 12345) % 2147483648) / 2147483648;
  const words = kind === 'spam' ? SPAM_WORDS : HAM_WORDS;
  const pick = (list: string[]) => list[Math.floor(next() * list.length)]!;
  const message = Array.from({ length: 60 }, () => pick(next() < 0.5 ? words : COMMON)).join(' ');
  return { subject: Array.from({ length: 4 }, () => pick(words)).join(' '), message };
}

/** Submits a form to `key` from a visitor; the submission's id. */
export async function submitTo(h: Harness, key: TestKey, fields: { subject?: string; message: string }): Promise<string> {
  const response = await submitJson(h, { access_key: key.key, email: 'visitor@example.org', ...fields });
  expect(response.status).toBe(200);
  return response.json.submission_id as string;
}

/** The submission's admin record once the worker is done with it (sent, spam, or anything settled). */
export function settledRecord(h: Harness, adminToken: string, id: string): Promise<any> {
  return eventually(
    async () => {
      const record = (await adminRequest(h, adminToken, 'GET', `/admin/submissions/${id}`)).json;
      return ['queued', 'sending', 'retrying'].includes(record.email_status) ? undefined : record;
    },
    20_000,
    `submission ${id} settled`,
  );
}

/**
 * The owner's marks as the console makes them: each message submitted to `key`, checked, then
 * marked spam or not spam through the owner API; each mark must be taught (or known: the filter
 * learned that very text before).
 */
export async function teachByMarks(h: Harness, key: TestKey, owner: OwnerClient, messages: { spam: string[]; ham: string[] }): Promise<void> {
  const marks: Array<[id: string, mark: 'spam' | 'ham']> = [];
  for (let n = 0; n < Math.max(messages.spam.length, messages.ham.length); n += 1) {
    if (messages.spam[n]) marks.push([await submitTo(h, key, { message: messages.spam[n]! }), 'spam']);
    if (messages.ham[n]) marks.push([await submitTo(h, key, { message: messages.ham[n]! }), 'ham']);
  }
  const ids = marks.map(([id]) => id);
  await eventually(
    async () => {
      const [row] = await h.sql<{ n: number }>(
        `select count(*)::int as n from submissions where id = any($1) and email_status not in ('queued', 'sending', 'retrying')`,
        [ids],
      );
      return row!.n === ids.length ? true : undefined;
    },
    60_000,
    'the messages to mark checked',
  );
  for (const [id, mark] of marks) {
    const response = await owner.api('POST', `/submissions/${id}/spam-mark`, { mark });
    expect(response.status).toBe(200);
    expect(response.json.teaching).toMatch(/^(taught|known)$/);
  }
}

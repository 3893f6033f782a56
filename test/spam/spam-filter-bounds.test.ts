// The spam filter's bounds: a key teaches at most SPAM_TEACH_PER_KEY_PER_HOUR marks an hour (past it
// a mark still moves the message, and is taught once the allowance frees up), and a filter that hangs or dies mid-run costs
// no mail: the emails go out marked unchecked, counted in the metrics.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { signalChild } from '../../src/local/processes.ts';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { adminClient } from '../support/client.ts';
import { backdateSpamTeachings } from '../support/factories.ts';
import { eventually, startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { signIn } from '../support/owner.ts';
import { formMessage, settledRecord, spamFilterEnv, startSpamFilter, submitTo } from '../support/spam-filter.ts';
import { runPeriodicJob } from '../support/reconciler.ts';

const TOKEN = 'spam-bounds-admin-token-0123456789';
const CAP = 3;
// Long enough for a check on a busy machine, short enough for the tests of a filter that hangs.
const CHECK_TIMEOUT_MS = 1_000;
// How often the workers teach the marks left untaught.
const TEACH_LATER_INTERVAL_MS = 300;

let filter: RspamdService;
let h: Harness;
const admin = adminClient(() => h, TOKEN);

beforeAll(async () => {
  filter = await startSpamFilter();
  h = await startHarness({
    env: {
      ...spamFilterEnv(filter),
      ADMIN_TOKEN: TOKEN,
      SPAM_TEACH_PER_KEY_PER_HOUR: String(CAP),
      SPAM_CHECK_TIMEOUT_MS: String(CHECK_TIMEOUT_MS),
      SPAM_TEACH_LATER_INTERVAL_MS: String(TEACH_LATER_INTERVAL_MS),
    },
  });
}, 90_000);
afterAll(async () => {
  await h?.stop();
  await filter?.stop();
});

const submit = (key: TestKey, fields: { subject?: string; message: string }) => submitTo(h, key, fields);

const settled = (id: string) => settledRecord(h, TOKEN, id);

/** The submissions among `ids` whose mark the filter has been taught. */
async function taughtOf(ids: string[]): Promise<string[]> {
  const rows = await h.sql<{ id: string }>('select id from submissions where id = any($1) and spam_taught_at is not null', [ids]);
  return rows.map((row) => row.id).sort();
}

/** The marks taught for an owner's mailbox, counted by the service only when rspamd answered that it learned one. */
async function ownerMarks(email: string): Promise<{ spam: number; ham: number }> {
  const [row] = await h.sql<{ spam: number; ham: number }>('select spam, ham from owner_spam_marks where mailbox = lower($1)', [email]);
  return { spam: row?.spam ?? 0, ham: row?.ham ?? 0 };
}

describe('the teaching allowance', () => {
  it(`teaches ${CAP} marks of a key an hour; past that a mark is kept and acted on, and taught once the hour has passed`, async () => {
    const key = await h.createKey();
    const owner = await signIn(h, key.email);
    const ids = [];
    for (let seed = 1; seed <= CAP + 2; seed += 1) ids.push(await submit(key, formMessage('spam', seed)));
    for (const id of ids) await settled(id);
    const outcomes = [];
    for (const id of ids) {
      const response = await owner.api('POST', `/submissions/${id}/spam-mark`, { mark: 'spam' });
      expect(response.status).toBe(200);
      expect(response.json.submission.spam.mark).toBe('spam');
      outcomes.push(response.json.teaching);
    }
    expect(outcomes.slice(0, CAP).every((outcome) => outcome === 'taught' || outcome === 'known')).toBe(true);
    expect(outcomes.slice(CAP)).toEqual(['capped', 'capped']);
    // The same mark again on a message taught already: nothing more to learn.
    expect((await owner.api('POST', `/submissions/${ids[0]}/spam-mark`, { mark: 'spam' })).json.teaching).toBe('known');
    // Another key of the same owner has an allowance of its own.
    const second = await h.createKey({ email: key.email });
    const otherId = await submit(second, formMessage('spam', 99));
    await settled(otherId);
    expect((await owner.api('POST', `/submissions/${otherId}/spam-mark`, { mark: 'spam' })).json.teaching).toMatch(/taught|known/);
    // The console says it is taught later.
    const page = await owner.post(`/owner/submissions/${ids[CAP + 1]}/spam-mark`, { mark: 'ham' });
    expect(page.status).toBe(303);
    expect(page.headers.location).toContain('notice=ham-untaught');
    const metrics = (await admin('GET', '/metrics')).text;
    expect(metrics).toMatch(/cfs_spam_marks_total\{mark="spam",outcome="capped"\} 2/);

    // The workers try every TEACH_LATER_INTERVAL_MS; within the hour the allowance stays spent:
    // a run of theirs, awaited here, teaches neither.
    const waiting = ids.slice(CAP);
    const marksBefore = await ownerMarks(key.email);
    await runPeriodicJob(h, 'spam-teach-later');
    expect(await taughtOf(waiting)).toEqual([]);
    // An hour later (the marks taught moved back by one), the two waiting marks are taught, as marked now.
    await backdateSpamTeachings(h, key, { minutes: 61 });
    const expected = { spam: marksBefore.spam + 1, ham: marksBefore.ham + 1 };
    await eventually(
      async () => (JSON.stringify(await ownerMarks(key.email)) === JSON.stringify(expected) ? true : undefined),
      20_000,
      'the waiting marks taught',
    );
    expect(await taughtOf(waiting)).toEqual([...waiting].sort());
  });

  it('gives no place back for reversing a taught mark, nor for deleting its message: a reversal waits like any mark', async () => {
    const key = await h.createKey();
    const owner = await signIn(h, key.email);
    const ids = [];
    for (let seed = 51; seed <= 51 + 2 * CAP + 1; seed += 1) ids.push(await submit(key, formMessage('spam', seed)));
    for (const id of ids) await settled(id);
    const mark = async (id: string, to: 'spam' | 'ham') => (await owner.api('POST', `/submissions/${id}/spam-mark`, { mark: to })).json.teaching;
    for (const id of ids.slice(0, CAP)) expect(await mark(id, 'spam')).toMatch(/taught|known/);
    // Each taught mark reversed waits its turn, and makes no room for the next message's mark.
    for (let index = 0; index < CAP; index += 1) {
      expect(await mark(ids[index]!, 'ham')).toBe('capped');
      expect(await mark(ids[CAP + index]!, 'spam')).toBe('capped');
    }
    // Nor does deleting a message whose mark was taught.
    expect((await owner.api('DELETE', `/submissions/${ids[0]}`)).status).toBeLessThan(300);
    expect(await mark(ids[2 * CAP]!, 'spam')).toBe('capped');
    const [teachings] = await h.sql<{ n: number }>(
      `select count(*)::int as n from spam_teachings where key_id = $1 and taught_at > now() - interval '1 hour'`,
      [key.id],
    );
    expect(teachings!.n).toBe(CAP);
  });

  it('teaches a mark made while the filter could not learn once it can', async () => {
    const key = await h.createKey();
    const owner = await signIn(h, key.email);
    const id = await submit(key, formMessage('spam', 42));
    await settled(id);
    // Frozen: the mark's teaching times out, and the workers' tries wait for it to answer.
    signalChild(filter.child, 'SIGSTOP');
    try {
      const response = await owner.api('POST', `/submissions/${id}/spam-mark`, { mark: 'spam' });
      expect(response.status).toBe(200);
      expect(response.json.teaching).toBe('failed');
      expect(response.json.submission.spam.mark).toBe('spam');
    } finally {
      signalChild(filter.child, 'SIGCONT');
    }
    await eventually(async () => ((await ownerMarks(key.email)).spam === 1 ? true : undefined), 30_000, 'the mark taught');
    expect(await taughtOf([id])).toEqual([id]);
  });

  it("refuses a mark that is neither spam nor ham, and another owner's submission", async () => {
    const key = await h.createKey();
    const stranger = await h.createKey();
    const owner = await signIn(h, key.email);
    const id = await submit(key, { message: 'A question' });
    const theirs = await submit(stranger, { message: 'Not yours' });
    expect((await owner.api('POST', `/submissions/${id}/spam-mark`, { mark: 'junk' })).status).toBe(400);
    expect((await owner.api('POST', `/submissions/${id}/spam-mark`, { mark: 'spam', extra: 1 })).status).toBe(400);
    expect((await owner.api('POST', `/submissions/${theirs}/spam-mark`, { mark: 'spam' })).status).toBe(404);
  });
});

describe('the filter itself', () => {
  it('learns only from whoever has its password, on loopback too: a local user cannot teach it around the allowance', async () => {
    const body = `Subject: offer\r\n\r\n${formMessage('spam', 7).message}`;
    const learn = (headers: Record<string, string>) =>
      fetch(`${filter.controllerUrl}/learnspam`, { method: 'POST', body, headers }).then((response) => response.status);
    expect(await learn({})).toBe(401);
    expect(await learn({ Password: 'q1' })).toBe(401); // rspamd's stock password
    expect(await learn({ Password: filter.password })).toBe(200);
  });
});

/** cfs_spam_checks_total{verdict="unchecked"} in the metrics (0 before the first). */
async function uncheckedCount(): Promise<number> {
  const metrics = (await admin('GET', '/metrics')).text;
  return Number(/cfs_spam_checks_total\{verdict="unchecked"\} (\d+)/.exec(metrics)?.[1] ?? 0);
}

describe('a filter that stops answering', () => {
  it('sends each email unchecked once its check times out, and checks again when the filter answers', async () => {
    const key = await h.createKey();
    const uncheckedBefore = await uncheckedCount();
    // Frozen, not gone: its sockets still accept connections, as a filter stuck on a slow disk would.
    signalChild(filter.child, 'SIGSTOP');
    const ids = [];
    try {
      // Fewer than the five failures in a row that pause the checks for 30 s.
      for (let index = 0; index < 3; index += 1) ids.push(await submit(key, { message: `Sent while the filter hangs ${index}` }));
      for (const id of ids) {
        const record = await settled(id);
        expect(record.email_status).toBe('sent');
        expect(record.spam.verdict).toBe('unchecked');
      }
    } finally {
      signalChild(filter.child, 'SIGCONT');
    }
    expect(await uncheckedCount()).toBe(uncheckedBefore + 3);
    expect((await settled(await submit(key, { message: 'Checked once the filter answers again' }))).spam.verdict).toBe('ham');
  });
});

describe('a filter that dies', () => {
  it('costs no mail: the emails go out unchecked, counted, and the worker keeps going', async () => {
    const key = await h.createKey();
    expect((await settled(await submit(key, { message: 'Checked while the filter runs' }))).spam.verdict).toBe('ham');
    // Counted from here: on a busy machine an earlier check of this file can pass the timeout too.
    const uncheckedBefore = await uncheckedCount();
    // The main process and its workers at once, as an OOM kill or a crashed host would.
    signalChild(filter.child, 'SIGKILL');
    await eventually(async () => (filter.child.exitCode !== null || filter.child.signalCode !== null ? true : undefined), 10_000, 'rspamd gone');

    const ids = [];
    for (let index = 0; index < 8; index += 1) ids.push(await submit(key, { message: `Sent while the filter is down ${index}` }));
    for (const id of ids) {
      const record = await settled(id);
      expect(record.email_status).toBe('sent');
      expect(record.spam.verdict).toBe('unchecked');
    }
    for (let index = 0; index < 8; index += 1) {
      expect(h.sink.messages.some((mail) => (mail.parsed.text ?? '').includes(`Sent while the filter is down ${index}`))).toBe(true);
    }
    expect(await uncheckedCount()).toBe(uncheckedBefore + 8);
    // A mark cannot be taught now; it is kept and says so.
    const owner = await signIn(h, key.email);
    expect((await owner.api('POST', `/submissions/${ids[0]}/spam-mark`, { mark: 'spam' })).json.teaching).toBe('failed');
  });
});

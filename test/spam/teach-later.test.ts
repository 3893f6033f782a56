// The marks that waited (past their key's hourly allowance, or made while the filter was down) are
// taught by the workers' periodic job; here the job's function runs on its own, against a real
// PostgreSQL and rspamd, so that what each run picks can be seen. The last test times a reversal
// against a learning, with a filter of its own that stands in for rspamd.
import { afterAll, beforeAll, expect, it } from 'vitest';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { createLogger } from '../../src/shared/infra/log.ts';
import type { SpamMark } from '../../src/shared/words/spam-kinds.ts';
import { createSpamFilter, type SpamFilter } from '../../src/shared/spam/spam-filter.ts';
import { STALE_RESERVATION_MS, teachMark, teachUntaughtMarks } from '../../src/shared/spam/spam-teaching.ts';
import { ago, buildSpamMark, buildSpamTeaching, NOW } from '../support/factories.ts';
import { eventually, startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { formMessage, startSpamFilter, submitTo } from '../support/spam-filter.ts';

let filter: RspamdService;
// No spam filter for the service itself: its workers run no teaching job of their own.
let h: Harness;

beforeAll(async () => {
  filter = await startSpamFilter();
  h = await startHarness();
}, 90_000);
afterAll(async () => {
  await h?.stop();
  await filter?.stop();
});

/**
 * Submits and waits until the worker is done with the row: a worker updating it holds its lock, and
 * a run passes over locked rows (they are being reserved elsewhere), which would leave it untaught.
 */
async function submitSettled(key: TestKey, kind: 'spam' | 'ham', n: number): Promise<string> {
  const id = await submitTo(h, key, formMessage(kind, n));
  await eventually(async () => {
    const [row] = await h.sql<{ status: string }>('select email_status as status from submissions where id = $1', [id]);
    return row && !['queued', 'sending', 'retrying'].includes(row.status) ? row : undefined;
  });
  return id;
}

it("a key that has spent its allowance does not hold back another key's waiting marks", async () => {
  const [spent, other] = [await h.createKey(), await h.createKey()];
  const [taughtId, waitingId, otherId] = [await submitSettled(spent, 'spam', 1), await submitSettled(spent, 'spam', 2), await submitSettled(other, 'spam', 3)];
  // The first key taught its one mark of this hour, and has another waiting since before the other key's.
  await buildSpamMark(h, taughtId, { mark: 'spam', markedAt: ago({ hours: 2 }), taughtAt: NOW });
  await buildSpamTeaching(h, { key: spent, submission: taughtId, mark: 'spam' });
  await buildSpamMark(h, waitingId, { mark: 'spam', markedAt: ago({ hours: 1 }) });
  await buildSpamMark(h, otherId, { mark: 'spam', markedAt: ago({ minutes: 10 }) });

  const spamFilter = createSpamFilter({ scanUrl: filter.url, controllerUrl: filter.controllerUrl, password: filter.password });
  const settings = { mailFrom: 'forms@example.test', perKeyPerHour: 1, timeoutMs: 10_000, keysPerRun: 1 };
  const log = createLogger('test', 'silent');
  // One key a run: the other key's, since the first has no allowance left.
  expect(await teachUntaughtMarks(h.orm.em.fork(), spamFilter, settings, log)).toBe(1);
  const taught = await h.sql<{ id: string }>('select id from submissions where id = any($1) and spam_taught_at is not null', [[waitingId, otherId]]);
  expect(taught.map((row) => row.id)).toEqual([otherId]);
  // Nothing left that may be taught this hour.
  expect(await teachUntaughtMarks(h.orm.em.fork(), spamFilter, settings, log)).toBe(0);
});

it('puts the marks it set aside back when its time is up: they wait, untaught, for the next run', async () => {
  const key = await h.createKey();
  const ids = [await submitSettled(key, 'spam', 11), await submitSettled(key, 'ham', 12)];
  await buildSpamMark(h, ids, { mark: 'spam', markedAt: NOW });
  const spamFilter = createSpamFilter({ scanUrl: filter.url, controllerUrl: filter.controllerUrl, password: filter.password });
  const log = createLogger('test', 'silent');
  const settings = { mailFrom: 'forms@example.test', perKeyPerHour: 10, timeoutMs: 10_000 };
  expect(await teachUntaughtMarks(h.orm.em.fork(), spamFilter, { ...settings, budgetMs: 0 }, log)).toBe(0);
  const untaught = () => h.sql<{ id: string }>('select id from submissions where id = any($1) and spam_taught_at is null', [ids]);
  expect(await untaught()).toHaveLength(2);
  // The next run teaches them (and what the other test left waiting).
  expect(await teachUntaughtMarks(h.orm.em.fork(), spamFilter, settings, log)).toBeGreaterThanOrEqual(2);
  expect(await untaught()).toHaveLength(0);
});

it('teaches again a mark whose place was reserved by a process that stopped before the filter answered', async () => {
  const key = await h.createKey();
  const [leftBehindId, inProgressId] = [await submitSettled(key, 'spam', 21), await submitSettled(key, 'spam', 22)];
  // One reservation is older than any teaching takes (its process died); the other was just made.
  await buildSpamMark(h, leftBehindId, {
    mark: 'spam',
    markedAt: ago({ hours: 1 }),
    teachPending: true,
    taughtAt: ago({ seconds: STALE_RESERVATION_MS / 1_000 + 60 }),
  });
  await buildSpamMark(h, inProgressId, { mark: 'spam', markedAt: NOW, teachPending: true, taughtAt: NOW });
  const [before] = await h.sql<{ taught: Date }>('select spam_taught_at as taught from submissions where id = $1', [inProgressId]);

  const spamFilter = createSpamFilter({ scanUrl: filter.url, controllerUrl: filter.controllerUrl, password: filter.password });
  const settings = { mailFrom: 'forms@example.test', perKeyPerHour: 10, timeoutMs: 10_000 };
  expect(await teachUntaughtMarks(h.orm.em.fork(), spamFilter, settings, createLogger('test', 'silent'))).toBeGreaterThanOrEqual(1);

  const rows = await h.sql<{ id: string; pending: boolean; recent: boolean; taught: Date }>(
    `select id, spam_teach_pending as pending, spam_taught_at > now() - interval '1 minute' as recent, spam_taught_at as taught
       from submissions where id = any($1)`,
    [[leftBehindId, inProgressId]],
  );
  const byId = new Map(rows.map((row) => [row.id, row]));
  // Reserved again by this run, and taught: the filter answered.
  expect(byId.get(leftBehindId)).toMatchObject({ pending: false, recent: true });
  // Left to the process teaching it.
  expect(byId.get(inProgressId)).toMatchObject({ pending: true, taught: before!.taught });
});

it('ends with the mark the owner left when it is reversed while the filter learns the first', async () => {
  const key = await h.createKey();
  const id = await submitSettled(key, 'ham', 31);
  await buildSpamMark(h, id, { mark: 'ham', markedAt: NOW, taughtAt: NOW, teachPending: true });
  // A filter that learns slowly enough for the owner to mark the message spam meanwhile.
  const learned: SpamMark[] = [];
  const slowFilter: SpamFilter = {
    check: () => Promise.reject(new Error('not used')),
    learn: async (_sample, mark) => {
      learned.push(mark);
      if (learned.length === 1) await buildSpamMark(h, id, { mark: 'spam', markedAt: NOW });
      return 'taught';
    },
  };
  const settings = { mailFrom: 'forms@example.test', perKeyPerHour: 10, timeoutMs: 10_000 };
  expect(await teachMark(h.orm.em.fork(), slowFilter, settings, id, createLogger('test', 'silent'))).toBe('taught');
  // The filter learned the owner's last word after the first.
  expect(learned).toEqual(['ham', 'spam']);
  expect(await h.sql('select spam_teach_pending as pending from submissions where id = $1', [id])).toEqual([{ pending: false }]);
});

// A relay that refuses us rather than the message: a wrong password (535 to AUTH) or a sender it
// does not let us use (550 to MAIL FROM). Every message would get the same answer, so these are
// outages of our account, not verdicts on a message: nothing may end `failed`, and once the
// operator has fixed the account every submission is delivered. A 5xx about the message itself
// (its recipient) stays final at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { submitJson } from '../support/client.ts';
import type { SinkStep } from '../support/smtp-sink.ts';

let h: Harness;
let key: string;
beforeAll(async () => {
  h = await startHarness({
    smtpLogin: { user: 'forms', pass: 'relay-password' },
    env: {
      EMAIL_RETRY_BACKOFF_MS: '100',
      EMAIL_RETRY_MAX_BACKOFF_MS: '500',
      EMAIL_RETRY_HORIZON_MS: String(10 * 60_000),
      SMTP_BREAKER_THRESHOLD: '3',
      SMTP_PROBE_INTERVAL_MS: '500',
    },
  });
  key = (await h.createKey()).key;
});
afterAll(() => h?.stop());

type Row = { email_status: string; email_attempts: number; last_error: string | null };

async function submitSome(count: number, label: string): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i++) {
    const response = await submitJson(h, { access_key: key, email: 'visitor@example.org', message: `${label} ${i}` });
    expect(response.status).toBe(200);
    ids.push(response.json.submission_id);
  }
  return ids;
}

const rowsOf = (ids: string[]) => h.sql<Row>('select email_status, email_attempts, last_error from submissions where id = any($1)', [ids]);

async function readiness() {
  return (await (await fetch(`${h.url}/readyz`)).json()) as { delivery: { smtp: { breaker: string; reason?: string } } };
}

/** While `step` is refused: the breaker opens with the reply, no row `failed`; then fixed: all sent. */
async function outlastsRefusal(step: SinkStep, reply: { code: number; message: string }, label: string) {
  h.sink.refuse(step, reply);
  let ids: string[];
  try {
    ids = await submitSome(5, label);
    // The breaker opens after SMTP_BREAKER_THRESHOLD refusals; the other rows then wait untried.
    await eventually(async () => ((await readiness()).delivery.smtp.breaker === 'open' ? true : undefined), 20_000, 'the breaker to open');
    expect((await readiness()).delivery.smtp.reason).toContain(String(reply.code));
    const refused = await rowsOf(ids);
    expect(refused.filter((row) => row.email_status === 'failed')).toEqual([]);
    expect(refused.some((row) => row.last_error?.includes(String(reply.code)))).toBe(true);
    // Still refused a while later: the breaker's probes (one row at a time, every
    // SMTP_PROBE_INTERVAL_MS) are refused too; once two more have ended, none has made its row `failed`.
    const attempts = (rows: Row[]) => rows.reduce((sum, row) => sum + row.email_attempts, 0);
    const opened = attempts(await rowsOf(ids));
    await eventually(
      async () => {
        const rows = await rowsOf(ids);
        return attempts(rows) >= opened + 2 && rows.every((row) => row.email_status !== 'sending') ? true : undefined;
      },
      20_000,
      'two more probes refused',
    );
    expect((await rowsOf(ids)).map((row) => row.email_status).filter((status) => status === 'failed')).toEqual([]);
  } finally {
    h.sink.refuse(step, undefined);
  }
  await eventually(
    async () => {
      const rows = await rowsOf(ids);
      expect(rows.filter((row) => row.email_status === 'failed')).toEqual([]);
      return rows.every((row) => row.email_status === 'sent') ? true : undefined;
    },
    30_000,
    `every ${label} row to be sent once the account works`,
  );
  const arrived = new Set(h.sink.messages.map((mail) => mail.parsed.messageId));
  expect(ids.filter((id) => !arrived.has(`<submission-${id}@example.test>`))).toEqual([]);
}

describe('an SMTP relay that refuses our account', () => {
  it('a wrong password (535 to AUTH): submissions wait and are all sent once the password works', async () => {
    await outlastsRefusal('auth', { code: 535, message: '5.7.8 Authentication credentials invalid' }, 'auth');
  });

  it('our MAIL_FROM refused (550 to MAIL FROM): submissions wait and are all sent once the relay accepts it', async () => {
    await outlastsRefusal('mail-from', { code: 550, message: '5.7.1 Sender address rejected: not owned by user' }, 'sender');
  });
});

describe('an SMTP relay that refuses the message', () => {
  it('a recipient refused (550 to RCPT TO) is final at once: `failed` after one attempt, with the reply', async () => {
    await eventually(async () => ((await readiness()).delivery.smtp.breaker === 'closed' ? true : undefined), 10_000, 'the breaker to close');
    h.sink.refuse('rcpt-to', { code: 550, message: '5.1.1 No such user' });
    try {
      const [id] = await submitSome(1, 'recipient');
      const row = await eventually(
        async () => {
          const [current] = await rowsOf([id!]);
          return current?.email_status === 'failed' ? current : undefined;
        },
        20_000,
        'the row to fail',
      );
      expect(row.email_attempts).toBe(1);
      expect(row.last_error).toContain('No such user');
    } finally {
      h.sink.refuse('rcpt-to', undefined);
    }
  });
});

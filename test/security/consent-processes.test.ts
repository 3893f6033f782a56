// Recipient consent across API processes: two `npm run start:api` processes take concurrent
// submissions for one unconfirmed mailbox. Exactly UNCONFIRMED_EMAILS_PER_HOUR of them are emailed,
// the rest are held, the one "confirm" email goes out once; and once a process knows the allowance
// is spent, it goes on holding without asking PostgreSQL (the same outcome, on the fast path). An
// idle API process stops within 5 s of SIGTERM, as a container stop needs.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort, stopChild } from '../../src/local/services.ts';
import { submitJson } from '../support/client.ts';
import { SERVICE_START_WAIT_MS } from '../support/workers.ts';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { mailSettled } from '../support/rows.ts';
import { sleep } from '../support/sleep.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const ALLOWANCE = 5;
const CONFIRM_SUBJECT = 'Confirm to receive your contact form messages';

let h: Harness;
const apis: Array<{ child: ChildProcess; url: string }> = [];

async function spawnApi(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = spawn(process.execPath, ['src/api/main.ts'], {
    cwd: ROOT,
    env: { ...process.env, ...env, PORT: String(port), LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
  const api = { child, url: `http://127.0.0.1:${port}` };
  apis.push(api);
  await eventually(
    async () => {
      if (child.exitCode !== null) throw new Error(`the API exited with ${child.exitCode}:\n${output}`);
      return output.includes('api listening') ? true : undefined;
    },
    SERVICE_START_WAIT_MS,
    'the API to listen',
  );
  return api;
}

beforeAll(async () => {
  // The allowance is per clock hour: a run that would straddle the hour waits for the next one.
  const toNextHour = 3_600_000 - (Date.now() % 3_600_000);
  if (toNextHour < 60_000) await sleep(toNextHour + 1_000);
  h = await startHarness({ env: { UNCONFIRMED_EMAILS_PER_HOUR: String(ALLOWANCE) } });
  const env = { ...h.env, UNCONFIRMED_EMAILS_PER_HOUR: String(ALLOWANCE) };
  await Promise.all([spawnApi(env), spawnApi(env)]);
}, 60_000 + SERVICE_START_WAIT_MS);

afterAll(async () => {
  for (const api of apis) await stopChild(api.child, 'SIGTERM');
  await h?.stop();
});

const submissionsTo = (mailbox: string) =>
  h.sink.messages.filter((mail) => mail.envelope.to.includes(mailbox) && mail.parsed.subject?.startsWith('New contact form submission'));
const confirmsTo = (mailbox: string) => h.sink.messages.filter((mail) => mail.envelope.to.includes(mailbox) && mail.parsed.subject === CONFIRM_SUBJECT);

describe('the hourly allowance of an unconfirmed mailbox, with two API processes', () => {
  it('emails exactly the allowance, holds the rest and asks once to confirm, under concurrent submissions to both', async () => {
    const mailbox = 'two-apis@example.org';
    const key = (await postJson(`${apis[0]!.url}/`, { email: mailbox })).json.key as string;
    const submitTo = (index: number, message: string) => submitJson(apis[index % 2]!, { access_key: key, email: 'a@example.org', message });

    // 60 submissions, 12 at a time, alternating between the processes.
    const answers: Array<Awaited<ReturnType<typeof submitJson>>> = [];
    for (let wave = 0; wave < 5; wave++) {
      answers.push(...(await Promise.all(Array.from({ length: 12 }, (_, i) => submitTo(i, `wave ${wave} #${i}`)))));
    }
    expect(answers.every((answer) => answer.status === 200)).toBe(true);
    const statuses = answers.map((answer) => answer.json.email_status as string);
    expect(statuses.filter((status) => status === 'queued')).toHaveLength(ALLOWANCE);
    expect(statuses.filter((status) => status === 'held')).toHaveLength(60 - ALLOWANCE);

    // And 20 more, after both processes have seen the allowance spent: all held.
    const later = await Promise.all(Array.from({ length: 20 }, (_, i) => submitTo(i, `later #${i}`)));
    expect(later.map((answer) => [answer.status, answer.json.email_status])).toEqual(Array(20).fill([200, 'held']));

    const ids = [...answers, ...later].map((answer) => answer.json.submission_id as string);
    const rows = await h.sql<{ held: boolean; n: number }>(
      "select email_status = 'held' as held, count(*)::int as n from submissions where id = any($1::uuid[]) group by 1 order by 1",
      [ids],
    );
    expect(rows).toEqual([
      { held: false, n: ALLOWANCE },
      { held: true, n: 80 - ALLOWANCE },
    ]);
    const [allowance] = await h.sql<{ used: number }>('select used from mailbox_allowances where mailbox = $1', [mailbox]);
    expect(allowance?.used).toBe(ALLOWANCE);

    await eventually(
      async () => (submissionsTo(mailbox).length === ALLOWANCE && confirmsTo(mailbox).length === 1 ? true : undefined),
      20_000,
      'the allowed emails and the confirm email',
    );
    // Nothing more follows: every email taken on is sent or held.
    await mailSettled(h);
    expect(submissionsTo(mailbox)).toHaveLength(ALLOWANCE);
    expect(confirmsTo(mailbox)).toHaveLength(1);
    expect(await h.sql("select id from key_emails where kind = 'confirm' and mailbox = $1", [mailbox])).toHaveLength(1);
  });
});

describe('an API process under a container stop', () => {
  it('exits 0 within 5 s of SIGTERM when idle', async () => {
    const api = apis.pop()!;
    const exited = new Promise<number | null>((resolve) => api.child.once('exit', (code) => resolve(code)));
    const t0 = Date.now();
    api.child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });
});

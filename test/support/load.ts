// A load of submissions for the failover tests: clients that submit one after another until told
// to stop, and how many emails each submission got.
import { createHousekeepingQueue } from '../../src/shared/infra/queues/queues.ts';
import { submitJson } from './client.ts';
import { eventually, type Harness } from './harness.ts';
import { sentCount } from './rows.ts';

export type LoadAnswer = { status: number; retryAfter: string | null; id?: string };

/** The load while it runs: how many submissions were answered 200 so far. */
export type LoadSoFar = { accepted: () => number };

/**
 * `clients` loops submitting to `key` until `until` settles; every answer, or the error in place of
 * one (a step that fails fails the load). `until` may be a step given the load so far (to act after so many submissions, not after so
 * long: a busy machine answers fewer in the same time).
 */
export async function submitUntil(
  h: Harness,
  key: string,
  clients: number,
  until: Promise<unknown> | ((load: LoadSoFar) => Promise<unknown>),
): Promise<{ answers: LoadAnswer[]; errors: string[] }> {
  const answers: LoadAnswer[] = [];
  const errors: string[] = [];
  let going = true;
  const step = typeof until === 'function' ? until({ accepted: () => answers.filter((answer) => answer.status === 200).length }) : until;
  // Settled either way, the load stops; a step that failed fails the load with its own error, below.
  const stopped = step.then(
    () => (going = false),
    () => (going = false),
  );
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      for (let n = 0; going; n += 1) {
        try {
          const answer = await submitJson(h, { access_key: key, email: 'visitor@example.org', message: `client ${client}, message ${n}` });
          answers.push({ status: answer.status, retryAfter: answer.headers.get('retry-after'), id: answer.json?.submission_id });
        } catch (error) {
          errors.push((error as Error).message);
        }
      }
    }),
  );
  await stopped;
  await step;
  return { answers, errors };
}

/** The answers that are neither a 200 nor a 503 with Retry-After. */
export const abnormalAnswers = (answers: LoadAnswer[]) => answers.filter((answer) => !(answer.status === 200 || (answer.status === 503 && answer.retryAfter)));

/** How many emails the SMTP sink received for each submission. */
export function emailsPerSubmission(h: Harness): Map<string, number> {
  const counts = new Map<string, number>();
  for (const mail of h.sink.messages) {
    const id = /<submission-([0-9a-f-]+)@/.exec(mail.parsed.messageId ?? '')?.[1];
    if (id) counts.set(id, (counts.get(id) ?? 0) + 1);
  }
  return counts;
}

/**
 * Waits until every one of `ids` is `sent`. Past `timeoutMs` it throws with what stands in the way:
 * each row not sent, its job's state in the queue, and the periodic jobs (the reconciler among them).
 */
export async function waitForAllSent(h: Harness, ids: string[], timeoutMs: number): Promise<void> {
  try {
    await eventually(async () => ((await sentCount(h, ids)) === ids.length ? true : undefined), timeoutMs, 'every accepted submission sent');
  } catch (error) {
    const report = await undeliveredReport(h, ids).catch((failure: unknown) => `(no report: ${(failure as Error).message})`);
    throw new Error(`${(error as Error).message}\n${report}`, { cause: error });
  }
}

async function undeliveredReport(h: Harness, ids: string[]): Promise<string> {
  const rows = await h.sql<{ id: string; email_status: string; attempts: number; claimed_age_s: number | null; created_age_s: number }>(
    `select id, email_status, email_attempts as attempts, extract(epoch from now() - claimed_at)::int as claimed_age_s, extract(epoch from now() - created_at)::int as created_age_s
       from submissions where id = any($1::uuid[]) and email_status <> 'sent' order by created_at limit 20`,
    [ids],
  );
  const lines = await Promise.all(
    rows.map(
      async (row) =>
        `${row.id} ${row.email_status}, ${row.attempts} attempt(s), created ${row.created_age_s} s ago, claimed ${row.claimed_age_s ?? '-'} s ago, job: ${await h.api.deps.queue.getJobState(row.id).catch((e: unknown) => String(e))}`,
    ),
  );
  const housekeeping = createHousekeepingQueue(h.api.deps.redis, h.config.QUEUE_PREFIX);
  try {
    const counts = await housekeeping.getJobCounts();
    const schedulers = await housekeeping.getJobSchedulers();
    lines.push(
      `periodic jobs: ${JSON.stringify(counts)}; schedulers: ${schedulers.map((s) => `${s.key} next ${s.next ? new Date(s.next).toISOString() : '-'}`).join(', ')}`,
    );
  } catch (error) {
    lines.push(`periodic jobs: not read (${(error as Error).message})`);
  } finally {
    await housekeeping.close();
  }
  return lines.join('\n');
}

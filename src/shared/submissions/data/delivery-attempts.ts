// The delivery_attempts table: a submission's delivery history, one row per attempt of its email.
import type { EntityManager } from '@mikro-orm/postgresql';
import type { AttemptOutcome } from '../entities.ts';

/** One attempt to send the email: when, what came of it, the server's reply (or the error), which worker. */
export type AttemptRecord = { attempt: number; at: string; outcome: AttemptOutcome; response: string | null; worker: string };

/** The newest `perSubmission` attempts of each submission, newest first, with how many it has in all: one query. */
export async function latestAttempts(
  em: EntityManager,
  submissionIds: string[],
  perSubmission: number,
): Promise<Array<AttemptRecord & { submission_id: string; total: number }>> {
  return em.execute<Array<AttemptRecord & { submission_id: string; total: number }>>(
    `select s.id as submission_id, c.total, a.attempt, to_char(a.attempted_at at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"') as at,
            a.outcome, a.response, a.worker
       from submissions s
       cross join lateral (select count(*)::int as total from delivery_attempts d where d.submission_id = s.id) c
       join lateral (select * from delivery_attempts d where d.submission_id = s.id order by d.id desc limit ${Math.floor(perSubmission)}) a on true
      where s.id in (?)
      order by s.id, a.id desc`,
    [submissionIds],
  );
}

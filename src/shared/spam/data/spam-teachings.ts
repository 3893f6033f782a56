// Teaching the owners' marks to the spam filter: the spam_teachings table (each teaching, counted
// against its key's hourly allowance) and the teaching state of a mark on its submission
// (spam_taught_at: taught, or its place reserved; spam_teach_pending: the filter not answered yet).
import type { EntityManager } from '@mikro-orm/postgresql';
import type { SpamMark } from '../../words/spam-kinds.ts';

/** How many teachings of the key `keyId` (an SQL expression) count against its allowance: those of the last hour. */
const teachingsThisHour = (keyId: string) => `select count(*) from spam_teachings t where t.key_id = ${keyId} and t.taught_at > now() - interval '1 hour'`;

/**
 * Puts the marks `which` selects back to untaught, and gives back the places their reservations
 * took (the teaching row made with the reservation, at the same time). One statement: a teaching
 * cannot finish between the two.
 */
const giveBack = (which: string) => `
  with released as (
    update submissions s set spam_taught_at = null, spam_teach_pending = false
      from (select id, spam_taught_at as reserved_at from submissions where ${which} for update) old
     where s.id = old.id
    returning s.id, old.reserved_at),
  dropped as (delete from spam_teachings t using released r where t.submission_id = r.id and t.taught_at = r.reserved_at)
  select id from released`;

/** Takes the key's teaching lock for the rest of the transaction: two marks at once cannot both take the last of the allowance. */
export async function lockTeachingAllowance(tx: EntityManager, keyId: string): Promise<void> {
  await tx.execute('select pg_advisory_xact_lock(hashtext(?))', [`spam-teach:${keyId}`]);
}

/** The key's teachings of the last hour. */
export async function countTeachingsThisHour(tx: EntityManager, keyId: string): Promise<number> {
  const [counted] = await tx.execute<Array<{ taught: number }>>(`select (${teachingsThisHour('?')})::int as taught`, [keyId]);
  return counted?.taught ?? 0;
}

/** Records a teaching of the submission's mark: one place of the key's allowance taken. */
export async function insertTeaching(tx: EntityManager, keyId: string, submissionId: string, mark: SpamMark): Promise<void> {
  await tx.execute('insert into spam_teachings (id, key_id, submission_id, mark) values (gen_random_uuid(), ?, ?, ?)', [keyId, submissionId, mark]);
}

/** The marks of these submissions back to untaught, their places given back. */
export async function giveBackPlaces(em: EntityManager, submissionIds: string[]): Promise<void> {
  if (submissionIds.length) await em.execute(giveBack('id in (?)'), [submissionIds]);
}

/** Puts back to untaught the reservations older than `olderThanMs` whose filter answer never came, their places given back; returns how many. */
export async function releaseStaleReservations(em: EntityManager, olderThanMs: number): Promise<number> {
  const released = await em.execute<Array<{ id: string }>>(giveBack('spam_teach_pending and spam_taught_at < now() - make_interval(secs => ?)'), [
    olderThanMs / 1_000,
  ]);
  return released.length;
}

/** The filter has answered about the submission's mark (or there was nothing to teach). */
export async function endPending(em: EntityManager, submissionId: string): Promise<void> {
  await em.execute('update submissions set spam_teach_pending = false where id = ?', [submissionId]);
}

/** The submission's mark as it is now (the owner may have changed it meanwhile). */
export async function currentMark(em: EntityManager, submissionId: string): Promise<SpamMark | null | undefined> {
  const [now] = await em.execute<Array<{ mark: SpamMark | null }>>('select spam_mark as mark from submissions where id = ?', [submissionId]);
  return now?.mark;
}

/** The mark's place is reserved again, now (for teaching its reversal). */
export async function reserveAgain(tx: EntityManager, submissionId: string): Promise<void> {
  await tx.execute('update submissions set spam_taught_at = now() where id = ?', [submissionId]);
}

/** The mark waits untaught, with no reservation. */
export async function markUntaught(em: EntityManager, submissionId: string): Promise<void> {
  await em.execute('update submissions set spam_taught_at = null, spam_teach_pending = false where id = ?', [submissionId]);
}

/** Keys with untaught marks and fewer than `perKeyPerHour` teachings this hour, those whose oldest mark waits longest first. */
export async function keysWithUntaughtMarks(em: EntityManager, perKeyPerHour: number, limit: number): Promise<string[]> {
  const keys = await em.execute<Array<{ key_id: string }>>(
    `with waiting as (
       select key_id, min(spam_marked_at) as oldest from submissions
        where spam_mark is not null and spam_taught_at is null group by key_id)
     select w.key_id from waiting w
      where (${teachingsThisHour('w.key_id')}) < ?
      order by w.oldest limit ?`,
    [perKeyPerHour, limit],
  );
  return keys.map((row) => row.key_id);
}

/** Reserves places for the key's oldest `count` untaught marks (rows another process is reserving are passed over); returns them. */
export async function reserveUntaughtMarks(tx: EntityManager, keyId: string, count: number): Promise<Array<{ id: string; mark: SpamMark }>> {
  return tx.execute<Array<{ id: string; mark: SpamMark }>>(
    `update submissions set spam_taught_at = now(), spam_teach_pending = true
      where id in (select id from submissions where key_id = ? and spam_mark is not null and spam_taught_at is null
                    order by spam_marked_at limit ? for update skip locked)
      returning id, spam_mark as mark`,
    [keyId, count],
  );
}

/** Housekeeping: teachings older than a day no longer count against any allowance. */
export async function deleteOldTeachings(em: EntityManager): Promise<void> {
  await em.execute(`delete from spam_teachings where taught_at < now() - interval '1 day'`);
}

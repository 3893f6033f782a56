// The owner console overview's counts of the submissions table: per key and UTC day, by what became
// of each message's email. Each is one query on the (key_id, created_at) index; none reads a
// message's text. A test message from the console is in none of them.
import type { EntityManager } from '@mikro-orm/postgresql';

/** What became of a message, as the overview counts it (src/shared/owners/overview.ts). */
export const OUTCOMES = ['delivered', 'spam', 'failed', 'other'] as const;
export type Outcome = (typeof OUTCOMES)[number];

/** The SQL for each outcome: delivered; held as spam; bounced or failed (or not attempted); waiting, held for consent or not emailed. */
const OUTCOME_SQL: Record<Outcome, string> = {
  delivered: `email_status = 'sent'`,
  spam: `email_status = 'spam'`,
  failed: `email_status in ('failed', 'bounced', 'complained', 'suppressed')`,
  other: `email_status in ('queued', 'sending', 'retrying', 'held', 'skipped')`,
};

/** The keys' messages since `since` (a UTC midnight), per key and day (days since `since`), counted by `outcomes`. */
export async function countsByKeyAndDay(
  em: EntityManager,
  keyIds: string[],
  since: Date,
  outcomes: readonly Outcome[],
): Promise<Array<{ key_id: string; day: number } & Record<Outcome, number>>> {
  if (!keyIds.length) return [];
  return em.execute<Array<{ key_id: string; day: number } & Record<Outcome, number>>>(
    // The day as a number of days since the first: cheaper per row than formatting a date.
    `select key_id, ((created_at at time zone 'UTC')::date - ?::date) as day,
            ${outcomes.map((outcome) => `count(*) filter (where ${OUTCOME_SQL[outcome]})::int as ${outcome}`).join(', ')}
       from submissions where key_id in (?) and created_at >= ? and not test group by 1, 2`,
    [since.toISOString().slice(0, 10), keyIds, since],
  );
}

/** Every message the keys hold, whatever its age, and the time of the last. */
export async function storedAndLast(em: EntityManager, keyIds: string[]): Promise<{ stored: number; last_at: Date | null } | undefined> {
  if (!keyIds.length) return { stored: 0, last_at: null };
  const [summary] = await em.execute<Array<{ stored: number; last_at: Date | null }>>(
    `select (select count(*)::int from submissions where key_id in (?) and not test) as stored,
            (select max(created_at) from submissions where key_id in (?) and not test) as last_at`,
    [keyIds, keyIds],
  );
  return summary;
}

/** Each key's last message's time, null for a key without one (one look at the end of its index each). */
export async function lastMessageAt(em: EntityManager, keyIds: string[]): Promise<Array<{ key_id: string; last_at: Date | null }>> {
  if (!keyIds.length) return [];
  return em.execute<Array<{ key_id: string; last_at: Date | null }>>(
    `select k.id as key_id, (select max(s.created_at) from submissions s where s.key_id = k.id and not s.test) as last_at from verification_keys k where k.id in (?)`,
    [keyIds],
  );
}

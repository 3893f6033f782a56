// The owner console's overview: messages per day over the last days, split by what became of their
// email, with totals and the last message's time, for one key or several. Each figure is one query
// on the (key_id, created_at) index; none reads a message's text.
import type { EntityManager } from '@mikro-orm/postgresql';

/** What became of a message's email, as the overview groups them. */
export const OUTCOMES = ['delivered', 'spam', 'failed', 'other'] as const;
export type Outcome = (typeof OUTCOMES)[number];
export type DayCounts = { day: string } & Record<Outcome, number>;

/** The SQL for each outcome: delivered; held as spam; bounced or failed (or not attempted); waiting, held for consent or not emailed. */
const OUTCOME_SQL: Record<Outcome, string> = {
  delivered: `email_status = 'sent'`,
  spam: `email_status = 'spam'`,
  failed: `email_status in ('failed', 'bounced', 'complained', 'suppressed')`,
  other: `email_status in ('queued', 'sending', 'retrying', 'held', 'skipped')`,
};

export type Overview = {
  days: DayCounts[];
  /** Each key's messages over the days, and how many of them bounced or failed. */
  perKey: Map<string, { recent: number; failed: number }>;
  totals: Record<Outcome, number> & { all: number };
  /** Every message the keys hold, whatever its age. */
  stored: number;
  lastAt: string | null;
};

/** The keys' messages per UTC day over the `days` days up to today (included), oldest first, every day present. */
export async function overviewOf(em: EntityManager, keyIds: string[], days = 30, now = new Date()): Promise<Overview> {
  const today = Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate());
  const since = new Date(today - (days - 1) * 86_400_000);
  // One pass over the days' rows, by key and day: the chart adds up the keys, the list of keys the days.
  const counts = keyIds.length
    ? await em.execute<Array<{ key_id: string; day: number } & Record<Outcome, number>>>(
        // The day as a number of days since the first: cheaper per row than formatting a date.
        `select key_id, ((created_at at time zone 'UTC')::date - ?::date) as day,
                ${OUTCOMES.map((outcome) => `count(*) filter (where ${OUTCOME_SQL[outcome]})::int as ${outcome}`).join(', ')}
           from submissions where key_id in (?) and created_at >= ? group by 1, 2`,
        [since.toISOString().slice(0, 10), keyIds, since],
      )
    : [];
  const byDay = new Map<number, Record<Outcome, number>>();
  const perKey = new Map<string, { recent: number; failed: number }>();
  for (const row of counts) {
    const day = byDay.get(row.day) ?? { delivered: 0, spam: 0, failed: 0, other: 0 };
    const key = perKey.get(row.key_id) ?? { recent: 0, failed: 0 };
    for (const outcome of OUTCOMES) {
      day[outcome] += row[outcome];
      key.recent += row[outcome];
    }
    key.failed += row.failed;
    byDay.set(row.day, day);
    perKey.set(row.key_id, key);
  }
  const series: DayCounts[] = [];
  for (let i = 0; i < days; i++) {
    const day = new Date(since.getTime() + i * 86_400_000).toISOString().slice(0, 10);
    const row = byDay.get(i);
    series.push({ day, delivered: row?.delivered ?? 0, spam: row?.spam ?? 0, failed: row?.failed ?? 0, other: row?.other ?? 0 });
  }
  const totals = { delivered: 0, spam: 0, failed: 0, other: 0, all: 0 };
  for (const day of series) {
    for (const outcome of OUTCOMES) {
      totals[outcome] += day[outcome];
      totals.all += day[outcome];
    }
  }
  const [summary] = keyIds.length
    ? await em.execute<Array<{ stored: number; last_at: Date | null }>>(
        `select (select count(*)::int from submissions where key_id in (?)) as stored,
                (select max(created_at) from submissions where key_id in (?)) as last_at`,
        [keyIds, keyIds],
      )
    : [{ stored: 0, last_at: null }];
  return { days: series, perKey, totals, stored: summary?.stored ?? 0, lastAt: summary?.last_at ? new Date(summary.last_at).toISOString() : null };
}

/** Each key's last message's time (one look at the end of its index each). */
export async function lastMessageTimes(em: EntityManager, keyIds: string[]): Promise<Map<string, string>> {
  const rows = keyIds.length
    ? await em.execute<Array<{ key_id: string; last_at: Date | null }>>(
        `select k.id as key_id, (select max(s.created_at) from submissions s where s.key_id = k.id) as last_at from verification_keys k where k.id in (?)`,
        [keyIds],
      )
    : [];
  return new Map(rows.filter((row) => row.last_at).map((row) => [row.key_id, new Date(row.last_at!).toISOString()]));
}

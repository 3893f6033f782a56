// The owner console's overview: messages per day over the last days, split by what became of their
// email, with totals and the last message's time, for one key or several. The counts come from
// ./data/overview-counts.ts.
import type { EntityManager } from '@mikro-orm/postgresql';
import { countsByKeyAndDay, lastMessageAt, OUTCOMES, storedAndLast, type Outcome } from './data/overview-counts.ts';

export { OUTCOMES, type Outcome };

/** One day's messages, counted by what became of their email. */
export type DayCounts = { day: string } & Record<Outcome, number>;

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
  const counts = await countsByKeyAndDay(em, keyIds, since, OUTCOMES);
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
  const summary = await storedAndLast(em, keyIds);
  return { days: series, perKey, totals, stored: summary?.stored ?? 0, lastAt: summary?.last_at ? new Date(summary.last_at).toISOString() : null };
}

/** Each key's last message's time (one look at the end of its index each). */
export async function lastMessageTimes(em: EntityManager, keyIds: string[]): Promise<Map<string, string>> {
  const rows = await lastMessageAt(em, keyIds);
  return new Map(rows.filter((row) => row.last_at).map((row) => [row.key_id, new Date(row.last_at!).toISOString()]));
}

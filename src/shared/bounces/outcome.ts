// What a report that came back does to its row, decided from the row's status and the report it
// already carries (src/bounces/record.ts writes it): a hard bounce makes the row `bounced`, a
// complaint `complained`, a soft bounce or a delay is kept as its report with the status unchanged.
// Idempotent: a report the row already carries, or a weaker one than it carries, changes nothing
// (a relay may send a DSN twice, and a delay may arrive after the bounce).
import type { BounceType } from '../db/entities.ts';
import { REPORTED } from '../delivery-statuses.ts';

/** `unknown`: no such row (retention deleted it, say): nothing to do. `noted`: kept as the row's report, status unchanged. */
export type RecordOutcome = 'bounced' | 'complained' | 'noted' | 'duplicate' | 'unknown';

/** The row as the report finds it: its status, and the type of the report it carries (null: none). */
export type ReportedRow = { emailStatus: string; bounceType: BounceType | null };

/** Reports by severity: a weaker one never replaces a stronger one on the row. */
const SEVERITY: Record<BounceType, number> = { delayed: 1, soft: 2, hard: 3, complaint: 3 };

/** What a report of type `report` does to `row` (undefined: the row is gone). */
export function reportOutcome(row: ReportedRow | undefined, report: BounceType): RecordOutcome {
  if (!row) return 'unknown';
  const reported = REPORTED.includes(row.emailStatus as never);
  if (report === 'hard') return reported ? 'duplicate' : 'bounced';
  if (report === 'complaint') return row.emailStatus === 'complained' ? 'duplicate' : 'complained';
  // Soft and delayed: the row's report, unless a final or stronger one is there already.
  if (reported || (row.bounceType && SEVERITY[row.bounceType] > SEVERITY[report])) return 'duplicate';
  return 'noted';
}

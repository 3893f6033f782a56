// What a report that came back does to its row, decided from the row's status and the report it
// already carries (src/shared/bounces/record.ts writes it): a hard bounce makes the row `bounced`, a
// complaint `complained`, a soft bounce or a delay is kept as its report with the status unchanged.
// Idempotent: a report the row already carries, or a weaker one than it carries, changes nothing
// (a relay may send a DSN twice, and a delay may arrive after the bounce).
import type { BounceType } from '../words/bounce-columns.ts';
import type { ReturnedKind } from './return-path.ts';
import type { EmailStatus } from '../deliveries/delivery-columns.ts';
import { REPORTED } from '../deliveries/delivery-statuses.ts';
import { transition } from '../deliveries/delivery-transitions.ts';

/** `unknown`: no such row (retention deleted it, say): nothing to do. `noted`: kept as the row's report, status unchanged. */
export type RecordOutcome = 'bounced' | 'complained' | 'noted' | 'duplicate' | 'unknown';

/** The row as the report finds it: its status, and the type of the report it carries (null: none). */
export type ReportedRow = { emailStatus: EmailStatus; bounceType: BounceType | null };

/** Reports by severity: a weaker one never replaces a stronger one on the row. */
const SEVERITY: Record<BounceType, number> = { delayed: 1, soft: 2, hard: 3, complaint: 3 };

/**
 * What a report of type `report` does to `row`, an email of `kind` (undefined: the row is gone).
 * Whether the status takes a bounce or a complaint is the transition table's answer, as for the
 * statement that writes it.
 */
export function reportOutcome(row: ReportedRow | undefined, report: BounceType, kind: ReturnedKind): RecordOutcome {
  if (!row) return 'unknown';
  if (report === 'hard') return transition(kind, 'bounce', row.emailStatus) === undefined ? 'duplicate' : 'bounced';
  if (report === 'complaint') return transition(kind, 'complain', row.emailStatus) === undefined ? 'duplicate' : 'complained';
  const reported = REPORTED.includes(row.emailStatus);
  // Soft and delayed: the row's report, unless a final or stronger one is there already.
  if (reported || (row.bounceType && SEVERITY[row.bounceType] > SEVERITY[report])) return 'duplicate';
  return 'noted';
}

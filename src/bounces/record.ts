// What a report that came back does to its row, in one transaction, committed before the
// receiver answers 250 (so no report is lost; PostgreSQL down means 4xx and the relay retries):
//   - hard bounce: the row becomes `bounced` (from any status but a report's: a bounce can come
//     before the worker recorded `sent`, and that write keeps it), the address it went to (exactly
//     as mailed: another spelling of the same inbox is not touched) counts one more hard bounce (at
//     the limit it is suppressed for a while), and a submission's enabled webhooks get a
//     `submission.bounced` delivery;
//   - complaint: the row becomes `complained`, and the mailbox is suppressed until its owner signs
//     in (the address said it does not want these emails);
//   - soft bounce, delay: kept on the row as its report, the status unchanged (not final).
// Idempotent: a report the row already carries changes nothing (a relay may send a DSN twice).
import type pg from 'pg';
import type { BounceType, EmailStatus } from '../shared/db/entities.ts';
import { REPORTED } from '../shared/delivery-statuses.ts';
import type { ReturnTarget } from '../shared/return-path.ts';
import { inPgTransaction } from '../shared/db/transactions.ts';
import { countHardBounce } from '../shared/bounces/data/address-bounces.ts';
import { noteComplaint } from '../shared/bounces/data/mailbox-complaints.ts';
import { lockReportedRow, REPORTED_TABLE, type ReportedRow } from '../shared/bounces/data/return-targets.ts';
import { addBouncedEvents } from '../shared/webhooks/data/webhook-deliveries.ts';
import { recordReturnedReport } from '../shared/submissions/data/delivery-status.ts';
import { transition } from '../shared/submissions/delivery-transitions.ts';

export type BounceReport = { type: BounceType; status: string | null; diagnostic: string | null; reportingMta: string | null };

/** `unknown`: no such row (retention deleted it, say): nothing to do. `noted`: kept as the row's report, status unchanged. */
export type RecordOutcome = 'bounced' | 'complained' | 'noted' | 'duplicate' | 'unknown';

export type SuppressionPolicy = { afterHardBounces: number; forHours: number };

/** Reports by severity: a weaker one never replaces a stronger one on the row. */
const SEVERITY: Record<BounceType, number> = { delayed: 1, soft: 2, hard: 3, complaint: 3 };

export async function recordReport(
  pool: pg.Pool,
  target: ReturnTarget,
  report: BounceReport,
  policy: SuppressionPolicy,
): Promise<{ outcome: RecordOutcome; webhookDeliveryIds: string[] }> {
  const table = REPORTED_TABLE[target.kind];
  return inPgTransaction(pool, async (client) => {
    const current = await lockReportedRow(client, target);
    const outcome = current ? decide(target.kind, current, report) : 'unknown';
    let webhookDeliveryIds: string[] = [];
    if (current && outcome !== 'duplicate' && outcome !== 'unknown') {
      await recordReturnedReport(client, target.kind, target.id, EVENT[outcome], report);
      if (outcome === 'bounced' && current.address) await countHardBounce(client, current.address, policy);
      if (outcome === 'complained' && current.mailbox) await noteComplaint(client, current.mailbox);
      if (outcome === 'bounced' && target.kind === 'submission' && current.key_id) {
        webhookDeliveryIds = await addBouncedEvents(client, target.id, current.key_id);
      }
    }
    return { outcome, webhookDeliveryIds };
  });
}

/** The status change of each outcome that writes the report (src/shared/submissions/delivery-transitions.ts). */
const EVENT = { bounced: 'bounce', complained: 'complain', noted: undefined } as const;

function decide(kind: ReturnTarget['kind'], current: ReportedRow, report: BounceReport): RecordOutcome {
  // Whether the row's status takes the report is the table's answer, as for the statement that writes it.
  if (report.type === 'hard') return transition(kind, 'bounce', current.email_status) === undefined ? 'duplicate' : 'bounced';
  if (report.type === 'complaint') return transition(kind, 'complain', current.email_status) === undefined ? 'duplicate' : 'complained';
  const reported = REPORTED.includes(current.email_status);
  // Soft and delayed: the row's report, unless a final or stronger one is there already.
  if (reported || (current.bounce_type && SEVERITY[current.bounce_type] > SEVERITY[report.type])) return 'duplicate';
  return 'noted';
}

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
import { reportOutcome, type RecordOutcome } from './outcome.ts';
import type { BounceType } from '../words/bounce-columns.ts';
import type { ReturnTarget } from './return-path.ts';
import { inPgTransaction } from '../infra/db/transactions.ts';
import { countHardBounce } from './data/address-bounces.ts';
import { noteComplaint } from './data/mailbox-complaints.ts';
import { lockReportedRow } from './data/return-targets.ts';
import { addBouncedEvents } from '../webhooks/webhooks.ts';
import { recordReturnedReport } from '../deliveries/deliveries.ts';

export type BounceReport = { type: BounceType; status: string | null; diagnostic: string | null; reportingMta: string | null };

export type SuppressionPolicy = { afterHardBounces: number; forHours: number };

export async function recordReport(
  pool: pg.Pool,
  target: ReturnTarget,
  report: BounceReport,
  policy: SuppressionPolicy,
): Promise<{ outcome: RecordOutcome; webhookDeliveryIds: string[] }> {
  return inPgTransaction(pool, async (client) => {
    const current = await lockReportedRow(client, target);
    const outcome = reportOutcome(current && { emailStatus: current.email_status, bounceType: current.bounce_type }, report.type, target.kind);
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

/** The status change of each outcome that writes the report (src/shared/deliveries/delivery-transitions.ts). */
const EVENT = { bounced: 'bounce', complained: 'complain', noted: undefined } as const;

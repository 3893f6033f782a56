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
import { reportOutcome, type RecordOutcome } from '../shared/bounces/outcome.ts';
import type { BounceType } from '../shared/db/entities.ts';
import type { ReturnTarget } from '../shared/return-path.ts';

export type BounceReport = { type: BounceType; status: string | null; diagnostic: string | null; reportingMta: string | null };

export type { RecordOutcome } from '../shared/bounces/outcome.ts';

export type SuppressionPolicy = { afterHardBounces: number; forHours: number };

const TABLE = { submission: 'submissions', 'key-email': 'key_emails' } as const;
/** The address and the mailbox the email went to: the key's for a submission, the row's own for a key email. */
const RECIPIENT = {
  submission: '(select k.email from verification_keys k where k.id = t.key_id) as address, (select k.mailbox from verification_keys k where k.id = t.key_id) as mailbox',
  'key-email': 't.email as address, t.mailbox',
} as const;

type Current = { email_status: string; bounce_type: BounceType | null; address: string | null; mailbox: string | null; key_id: string | null };

export async function recordReport(
  pool: pg.Pool,
  target: ReturnTarget,
  report: BounceReport,
  policy: SuppressionPolicy,
): Promise<{ outcome: RecordOutcome; webhookDeliveryIds: string[] }> {
  const table = TABLE[target.kind];
  const client = await pool.connect();
  try {
    await client.query('begin');
    const { rows } = await client.query<Current>(
      `select t.email_status, t.bounce_type, ${RECIPIENT[target.kind]}, t.key_id from ${table} t where t.id = $1 for update`,
      [target.id],
    );
    const current = rows[0];
    const outcome = reportOutcome(current && { emailStatus: current.email_status, bounceType: current.bounce_type }, report.type);
    let webhookDeliveryIds: string[] = [];
    if (current && outcome !== 'duplicate' && outcome !== 'unknown') {
      const status = outcome === 'noted' ? null : outcome;
      await client.query(
        `update ${table} set email_status = coalesce($2, email_status), bounce_type = $3, bounce_status = $4, bounce_diagnostic = $5,
                bounce_mta = $6, bounced_at = now()
          where id = $1`,
        [target.id, status, report.type, report.status, report.diagnostic, report.reportingMta],
      );
      if (outcome === 'bounced' && current.address) await countHardBounce(client, current.address, policy);
      if (outcome === 'complained' && current.mailbox) await noteComplaint(client, current.mailbox);
      if (outcome === 'bounced' && target.kind === 'submission' && current.key_id) {
        webhookDeliveryIds = await addBouncedEvents(client, target.id, current.key_id);
      }
    }
    await client.query('commit');
    return { outcome, webhookDeliveryIds };
  } catch (error) {
    await client.query('rollback').catch(() => undefined);
    throw error;
  } finally {
    client.release();
  }
}

/** One more hard bounce for the address; at the limit (and for each one past it) suppressed for `forHours` from now. */
async function countHardBounce(client: pg.PoolClient, address: string, policy: SuppressionPolicy): Promise<void> {
  await client.query(
    `insert into address_bounces as b (address, hard_bounces, last_bounced_at, suppressed_until)
     values ($1, 1, now(), case when 1 >= $2 then now() + make_interval(hours => $3) end)
     on conflict (address) do update
        set hard_bounces = b.hard_bounces + 1, last_bounced_at = now(),
            suppressed_until = case when b.hard_bounces + 1 >= $2 then now() + make_interval(hours => $3) else b.suppressed_until end`,
    [address, policy.afterHardBounces, policy.forHours],
  );
}

/** The mailbox complained: its submission emails are not attempted until its owner signs in (which deletes the row). */
async function noteComplaint(client: pg.PoolClient, mailbox: string): Promise<void> {
  await client.query(
    `insert into mailbox_complaints (mailbox, complained_at) values ($1, now())
     on conflict (mailbox) do update set complained_at = now()`,
    [mailbox],
  );
}

/** A `submission.bounced` delivery to each enabled endpoint of the key; their ids, to enqueue after the commit. */
async function addBouncedEvents(client: pg.PoolClient, submissionId: string, keyId: string): Promise<string[]> {
  const { rows } = await client.query<{ id: string }>(
    `insert into webhook_deliveries (id, endpoint_id, submission_id, event)
     select gen_random_uuid(), e.id, $1, 'submission.bounced' from webhook_endpoints e where e.key_id = $2 and e.enabled
     returning id`,
    [submissionId, keyId],
  );
  return rows.map((row) => row.id);
}

// The table of delivery status changes (src/shared/deliveries/delivery-transitions.ts) against
// what PostgreSQL does: for every kind of row, every status and every event of that kind, a row is
// put in the status, the event applied through the module that writes every status
// (src/shared/deliveries/data/claims.ts, outcomes.ts, releases.ts), and its status after must be the table's, or
// unchanged, with the function saying it refused, where the table has no row for it. A worker's
// outcome written under a claim that is no longer the row's (a worker that outlived its lease) is
// refused and leaves the row as it was. That no other
// code writes a status, and that docs/architecture.md lists the table's rows, is checked without a
// database: test/unit/deliveries/delivery-transitions.test.ts.
import { randomUUID } from 'node:crypto';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailboxOf } from '../../src/shared/keys/consent.ts';
import { EMAIL_STATUSES, type EmailStatus } from '../../src/shared/deliveries/delivery-columns.ts';
import type { DeliveryKindName } from '../../src/shared/deliveries/delivery-kinds.ts';
import {
  claimRow,
  claimSubmissions,
  createCopies,
  recordDelivered,
  recordFailure,
  recordReturnedReport,
  recordSent,
  recordSkipped,
  recordSpamVerdict,
  recordSpamVerdictAhead,
  recordSuppressed,
  releaseClaim,
  releaseHeld,
  releaseHeldCopies,
  releaseSkippedWebhooks,
  requeueFailed,
  writeSpamMark,
} from '../../src/shared/deliveries/deliveries.ts';
import { insertSubmissionRows, submissionRow } from '../../src/shared/submissions/data/submission-inserts.ts';
import { CREATED_AS, DELIVERY_EVENTS, transition, transitionsOf, type DeliveryEvent, type KindFor } from '../../src/shared/deliveries/delivery-transitions.ts';
import {
  ago,
  buildAutoresponse,
  buildKey,
  buildKeyRecipient,
  buildRecipientCopy,
  buildKeyEmail,
  buildSubmission,
  buildWebhookDelivery,
  buildWebhookEndpoint,
  NOW,
  type KeyRow,
  type WebhookEndpointRow,
} from '../support/factories.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { OWNER_MIN_LEARNS } from '../../src/shared/spam/spam-filter.ts';

const KINDS = ['submission', 'key-email', 'autoresponse', 'recipient-copy', 'webhook'] as const;
const LEASE_MS = 60_000;
const TABLES: Record<DeliveryKindName, string> = {
  submission: 'submissions',
  'key-email': 'key_emails',
  autoresponse: 'autoresponses',
  'recipient-copy': 'recipient_copies',
  webhook: 'webhook_deliveries',
};

let h: Harness;
let pool: pg.Pool;
let key: KeyRow;
let endpoint: WebhookEndpointRow;
beforeAll(async () => {
  // No worker: only the test changes the rows.
  h = await startHarness({ worker: false });
  pool = new pg.Pool({ connectionString: h.config.DATABASE_URL, max: 1 });
  key = await buildKey(h, { email: 'transitions-owner@example.test' });
  endpoint = await buildWebhookEndpoint(h, { key });
});
afterAll(async () => {
  await pool?.end();
  await h?.stop();
});

/** A row under test: its id, for a webhook delivery its submission's, for a copy its recipient's, and its claim (claimed_at) when it has one. */
type Row = { id: string; submissionId: string | undefined; recipientId?: string; claim: string | undefined };

/** Whether the row has a claim: none, one taken now, or one taken an hour ago (past the lease). */
type Claim = 'none' | 'live' | 'expired';

/** A row of `kind` in `status` with `claim`. */
async function rowIn(kind: DeliveryKindName, status: EmailStatus, claim: Claim): Promise<Row> {
  const claimedAt = claim === 'none' ? null : claim === 'expired' ? ago({ hours: 1 }) : NOW;
  let made: { id: string; submissionId: string | undefined; recipientId?: string };
  if (kind === 'submission') made = { id: (await buildSubmission(h, { key, status, claimedAt })).id, submissionId: undefined };
  else if (kind === 'key-email') made = { id: (await buildKeyEmail(h, { kind: 'confirm', key, status, claimedAt })).id, submissionId: undefined };
  else if (kind === 'autoresponse') made = { id: (await buildAutoresponse(h, { key, status, claimedAt })).id, submissionId: undefined };
  else if (kind === 'recipient-copy') {
    // Each copy has a recipient of its own: its release is that recipient's.
    const copy = await buildRecipientCopy(h, { recipient: await buildKeyRecipient(h, { key, confirmed: false }), status, claimedAt });
    made = { id: copy.id, submissionId: undefined, recipientId: copy.recipientId };
  } else {
    const submission = await buildSubmission(h, { key, status: 'spam' });
    const delivery = await buildWebhookDelivery(h, { endpoint, submission, status, claimedAt });
    made = { id: delivery.id, submissionId: delivery.submissionId };
  }
  const [row] = await h.sql<{ claim: string | null }>(`select claimed_at::text as claim from ${TABLES[kind]} where id = $1`, [made.id]);
  return { ...made, claim: row?.claim ?? undefined };
}

/** A claim no row of the test has: what a row without a claim is written under. */
const SOME_OTHER_CLAIM = '2000-01-01T00:00:00Z';

const em = () => h.orm.em.fork();
const failure = (kind: DeliveryKindName, final: boolean) => ({
  final,
  retryHorizonMs: 86_400_000,
  maxAttempts: undefined,
  reason: 'refused',
  ...(kind === 'submission' ? { retry: { delayMs: 1000, worker: 'test' } } : {}),
  ...(kind === 'webhook' ? { responseCode: 503 } : {}),
});
const report = (type: 'hard' | 'complaint') => ({
  type,
  status: type === 'hard' ? '5.1.1' : null,
  diagnostic: 'test report',
  reportingMta: 'mta.example.test',
});

/**
 * Applies `event` to the row through the module that writes statuses, a worker's outcome under
 * `claim`: true when the function reports it moved the row, false when it reports it refused.
 */
const apply: Record<DeliveryEvent, (kind: DeliveryKindName, row: Row, claim: string) => Promise<boolean>> = {
  claim: async (kind, row) => (await claimRow(em(), kind, row.id, LEASE_MS)) !== undefined,
  retry: async (kind, row, claim) => (await recordFailure(em(), kind, row.id, claim, failure(kind, false))) !== undefined,
  'give-up': async (kind, row, claim) => (await recordFailure(em(), kind, row.id, claim, failure(kind, true))) !== undefined,
  suppress: (kind, row, claim) => recordSuppressed(em(), kind as KindFor<'suppress'>, row.id, claim, 'suppressed for the test'),
  'spam-verdict': (_kind, row, claim) => recordSpamVerdict(em(), row.id, claim, 'spam', { score: 20, reasons: [] }),
  'spam-verdict-ahead': (_kind, row) => recordSpamVerdictAhead(em(), row.id, 'spam', { score: 20, reasons: [] }),
  sent: async (kind, row, claim) =>
    (await recordSent(pool, kind as KindFor<'sent'>, [{ id: row.id, claim, messageId: `<${row.id}@example.test>` }], 'test')).some(
      (sent) => sent.id === row.id,
    ),
  delivered: async (_kind, row, claim) => (await recordDelivered(em(), row.id, claim, 200)) !== undefined,
  skip: (_kind, row, claim) => recordSkipped(em(), row.id, claim, 'held as spam'),
  'release-claim': (kind, row, claim) => releaseClaim(em(), kind as KindFor<'release-claim'>, row.id, claim),
  'requeue-for-resend': (kind, row) => requeueFailed(em(), kind as KindFor<'requeue-for-resend'>, row.id),
  'release-held': async (kind, row) =>
    (kind === 'recipient-copy' ? await releaseHeldCopies(em(), row.recipientId!) : await releaseHeld(em(), mailboxOf(key.email))).includes(row.id),
  bounce: (kind, row) => recordReturnedReport(pool, kind as KindFor<'bounce'>, row.id, 'bounce', report('hard')),
  complain: (kind, row) => recordReturnedReport(pool, kind as KindFor<'complain'>, row.id, 'complain', report('complaint')),
  'mark-not-spam': async (kind, row) =>
    kind === 'webhook' ? (await releaseSkippedWebhooks(em(), row.submissionId!)).includes(row.id) : writeSpamMark(em(), row.id, 'ham', false),
};

const statusOf = async (kind: DeliveryKindName, id: string) =>
  (await h.sql<{ email_status: EmailStatus }>(`select email_status from ${TABLES[kind]} where id = $1`, [id]))[0]?.email_status;

/**
 * Every status a row can be in, each without a claim and with one (a report can come back while a
 * worker holds its claim); `sending` always with one: live, or past the lease.
 */
type Start = { status: EmailStatus; claim: Claim };
const STARTS: Start[] = EMAIL_STATUSES.flatMap((status): Start[] =>
  (status === 'sending' ? (['live', 'expired'] as const) : (['none', 'live'] as const)).map((claim) => ({ status, claim })),
);
const CLAIMED_STARTS = STARTS.filter((start) => start.claim !== 'none');

/** What the table's conditions see of a row written under its own claim (when it has one). */
const stateOf = (start: Start) => ({ claimExpired: start.claim === 'expired', ownClaim: start.claim !== 'none' });

/** What the walk writes down for one row: its status after, and what the function reported. */
const outcome = (start: Start, after: EmailStatus | undefined, applied: boolean) =>
  `${start.status}${start.claim === 'none' ? '' : start.claim === 'expired' ? ' (claim expired)' : ' (claimed)'} → ${after}${applied ? ' (applied)' : ' (refused)'}`;

/** The whole row, and for a submission its delivery history: what a refused write must leave as it was. */
const snapshot = async (kind: DeliveryKindName, id: string) =>
  (
    await h.sql<{ row: unknown; history: number }>(
      `select to_jsonb(t) as row, (select count(*)::int from delivery_attempts a where a.submission_id = t.id) as history from ${TABLES[kind]} t where t.id = $1`,
      [id],
    )
  )[0];

/** The events a worker records of its attempt: written only under the row's current claim. */
const underClaim = (kind: DeliveryKindName) => DELIVERY_EVENTS.filter((event) => transitionsOf(kind, event).some((row) => row.onlyIf === 'own-claim'));

describe('delivery status changes', () => {
  for (const kind of KINDS) {
    for (const event of DELIVERY_EVENTS.filter((candidate) => transitionsOf(kind, candidate).length > 0)) {
      it(`${kind}: ${event} moves each status as the table says`, async () => {
        const expected: string[] = [];
        const actual: string[] = [];
        for (const start of STARTS) {
          const row = await rowIn(kind, start.status, start.claim);
          const applied = await apply[event](kind, row, row.claim ?? SOME_OTHER_CLAIM);
          const to = transition(kind, event, start.status, stateOf(start));
          expected.push(outcome(start, to ?? start.status, to !== undefined));
          actual.push(outcome(start, await statusOf(kind, row.id), applied));
        }
        expect(actual).toEqual(expected);
      });
    }

    for (const event of underClaim(kind)) {
      it(`${kind}: ${event} under a claim the row no longer has is refused and changes nothing`, async () => {
        const expected: string[] = [];
        const actual: string[] = [];
        for (const start of CLAIMED_STARTS) {
          const row = await rowIn(kind, start.status, start.claim);
          const before = await snapshot(kind, row.id);
          // The claim of a worker that outlived its lease: the row was claimed again a second later.
          const [stale] = await h.sql<{ claim: string }>(`select (claimed_at - interval '1 second')::text as claim from ${TABLES[kind]} where id = $1`, [
            row.id,
          ]);
          const applied = await apply[event](kind, row, stale!.claim);
          const unchanged = JSON.stringify(await snapshot(kind, row.id)) === JSON.stringify(before);
          expected.push(`${outcome(start, start.status, false)}, row unchanged`);
          actual.push(`${outcome(start, await statusOf(kind, row.id), applied)}, row ${unchanged ? 'unchanged' : 'changed'}`);
        }
        expect(actual).toEqual(expected);
      });
    }
  }

  it('submission: the batched claim of a worker moves each status as the table says', async () => {
    const expected: string[] = [];
    const actual: string[] = [];
    for (const start of STARTS) {
      const row = await rowIn('submission', start.status, start.claim);
      const [claim] = await claimSubmissions(pool, [row.id], LEASE_MS, OWNER_MIN_LEARNS);
      const to = transition('submission', 'claim', start.status, stateOf(start));
      expected.push(outcome(start, to ?? start.status, to !== undefined));
      actual.push(outcome(start, await statusOf('submission', row.id), claim !== undefined));
    }
    expect(actual).toEqual(expected);
  });

  it('a new submission is saved in one of the statuses of its admission, and in no other', async () => {
    const saved: EmailStatus[] = [];
    for (const status of EMAIL_STATUSES) {
      const fields = {
        keyId: key.id,
        email: 'visitor@example.org',
        message: 'new',
        subject: 'new',
        customFields: [],
        clientIp: '127.0.0.1',
        origin: undefined,
      };
      let row;
      try {
        row = submissionRow({ ...fields, id: randomUUID(), emailStatus: status });
      } catch {
        continue;
      }
      await insertSubmissionRows(em(), [row]);
      saved.push((await statusOf('submission', row[0] as string))!);
    }
    expect(saved.toSorted()).toEqual(CREATED_AS.submission.toSorted());
  });

  it('a new copy to an added recipient is made queued for a confirmed recipient and held for one that has not confirmed, and in no other status', async () => {
    const owner = await buildKey(h, { email: 'copies-owner@example.test' });
    const confirmed = await buildKeyRecipient(h, { key: owner, email: 'confirmed@example.test' });
    const waiting = await buildKeyRecipient(h, { key: owner, email: 'waiting@example.test', confirmed: false });
    const submission = await buildSubmission(h, { key: owner });
    const made = await createCopies(em(), submission.id);
    const statuses = await h.sql<{ email: string; email_status: EmailStatus }>(
      'select email, email_status from recipient_copies where submission_id = $1 order by email',
      [submission.id],
    );
    expect(statuses).toEqual([
      { email: confirmed.email, email_status: 'queued' },
      { email: waiting.email, email_status: 'held' },
    ]);
    expect(made.map((copy) => copy.status).toSorted()).toEqual(['held', 'queued']);
    expect(CREATED_AS['recipient-copy'].toSorted()).toEqual(['held', 'queued']);
    // Made once: a second attempt of the owner's email makes none.
    expect(await createCopies(em(), submission.id)).toEqual([]);
  });

  it('a new key email, autoresponse or webhook delivery starts as the column default the table names', async () => {
    const defaults = await h.sql<{ table_name: string; column_default: string }>(
      `select table_name, column_default from information_schema.columns where column_name = 'email_status' and table_name = any($1)`,
      [[TABLES['key-email'], TABLES.autoresponse, TABLES.webhook]],
    );
    expect(Object.fromEntries(defaults.map((row) => [row.table_name, row.column_default]))).toEqual({
      [TABLES['key-email']]: `'${CREATED_AS['key-email'].join()}'::text`,
      [TABLES.autoresponse]: `'${CREATED_AS.autoresponse.join()}'::text`,
      [TABLES.webhook]: `'${CREATED_AS.webhook.join()}'::text`,
    });
  });
});

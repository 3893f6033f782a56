// The table of delivery status changes (src/shared/submissions/delivery-transitions.ts) against
// what PostgreSQL does: for every kind of row, every status and every event of that kind, a row is
// put in the status, the event applied through the module that writes every status
// (src/shared/submissions/data/delivery-status.ts), and its status after must be the table's, or
// unchanged, with the function saying it refused, where the table has no row for it. Also: no
// other code writes a status, and docs/architecture.md lists the table's rows.
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mailboxOf } from '../../src/shared/keys/consent.ts';
import { EMAIL_STATUSES, type EmailStatus } from '../../src/shared/infra/db/entities.ts';
import type { DeliveryKindName } from '../../src/shared/submissions/delivery-kinds.ts';
import {
  claimRow,
  claimSubmissions,
  insertSubmissionRows,
  recordDelivered,
  recordFailure,
  recordReturnedReport,
  recordSent,
  recordSkipped,
  recordSpamVerdict,
  recordSuppressed,
  releaseClaim,
  releaseHeld,
  releaseSkippedWebhooks,
  requeueFailed,
  submissionRow,
  writeSpamMark,
} from '../../src/shared/submissions/data/delivery-status.ts';
import {
  CREATED_AS,
  DELIVERY_EVENTS,
  TRANSITIONS,
  transition,
  transitionsOf,
  type DeliveryEvent,
  type KindFor,
} from '../../src/shared/submissions/delivery-transitions.ts';
import {
  ago,
  buildKey,
  buildKeyEmail,
  buildSubmission,
  buildWebhookDelivery,
  buildWebhookEndpoint,
  NOW,
  type KeyRow,
  type WebhookEndpointRow,
} from '../support/factories.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { functionsWritingStatus, statusWrites } from '../support/status-writers.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
const OWNER = 'src/shared/submissions/data/delivery-status.ts';
const MIGRATIONS = 'src/shared/infra/db/migrations/';
const KINDS = ['submission', 'key-email', 'webhook'] as const;
const LEASE_MS = 60_000;
const TABLES: Record<DeliveryKindName, string> = { submission: 'submissions', 'key-email': 'key_emails', webhook: 'webhook_deliveries' };

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

/** A row under test: its id, and for a webhook delivery its submission's. */
type Row = { id: string; submissionId: string | undefined };

/** A row of `kind` in `status`; a `sending` one claimed now, or an hour ago when its claim has expired. */
async function rowIn(kind: DeliveryKindName, status: EmailStatus, claimExpired: boolean): Promise<Row> {
  const claimedAt = status !== 'sending' ? null : claimExpired ? ago({ hours: 1 }) : NOW;
  if (kind === 'submission') return { id: (await buildSubmission(h, { key, status, claimedAt })).id, submissionId: undefined };
  if (kind === 'key-email') return { id: (await buildKeyEmail(h, { kind: 'confirm', key, status, claimedAt })).id, submissionId: undefined };
  const submission = await buildSubmission(h, { key, status: 'spam' });
  const delivery = await buildWebhookDelivery(h, { endpoint, submission, status, claimedAt });
  return { id: delivery.id, submissionId: delivery.submissionId };
}

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
 * Applies `event` to the row through the module that writes statuses: true when the function
 * reports it moved the row, false when it reports it refused, undefined when it reports neither
 * (a failure is written whatever the row's status, so there is nothing to refuse).
 */
const apply: Record<DeliveryEvent, (kind: DeliveryKindName, row: Row) => Promise<boolean | undefined>> = {
  claim: async (kind, row) => (await claimRow(em(), kind, row.id, LEASE_MS)) !== undefined,
  retry: (kind, row) => recordFailure(em(), kind, row.id, failure(kind, false)).then(() => undefined),
  'give-up': (kind, row) => recordFailure(em(), kind, row.id, failure(kind, true)).then(() => undefined),
  suppress: (kind, row) => recordSuppressed(em(), kind as KindFor<'suppress'>, row.id, 'suppressed for the test'),
  'spam-verdict': (_kind, row) => recordSpamVerdict(em(), row.id, 'spam', { score: 20, reasons: [] }),
  sent: async (kind, row) =>
    (await recordSent(pool, kind as KindFor<'sent'>, [{ id: row.id, messageId: `<${row.id}@example.test>` }], 'test')).some((sent) => sent.id === row.id),
  delivered: async (_kind, row) => (await recordDelivered(em(), row.id, 200)) !== undefined,
  skip: (_kind, row) => recordSkipped(em(), row.id, 'held as spam'),
  'release-claim': (kind, row) => releaseClaim(em(), kind as KindFor<'release-claim'>, row.id),
  'requeue-for-resend': (kind, row) => requeueFailed(em(), kind as KindFor<'requeue-for-resend'>, row.id),
  'release-held': async (_kind, row) => (await releaseHeld(em(), mailboxOf(key.email))).includes(row.id),
  bounce: (kind, row) => recordReturnedReport(pool, kind as KindFor<'bounce'>, row.id, 'bounce', report('hard')),
  complain: (kind, row) => recordReturnedReport(pool, kind as KindFor<'complain'>, row.id, 'complain', report('complaint')),
  'mark-not-spam': async (kind, row) =>
    kind === 'webhook' ? (await releaseSkippedWebhooks(em(), row.submissionId!)).includes(row.id) : writeSpamMark(em(), row.id, 'ham', false),
};

const statusOf = async (kind: DeliveryKindName, id: string) =>
  (await h.sql<{ email_status: EmailStatus }>(`select email_status from ${TABLES[kind]} where id = $1`, [id]))[0]?.email_status;

/** Every status a row can be in; `sending` twice, with a live claim and with one past the lease. */
type Start = { status: EmailStatus; claimExpired: boolean };
const STARTS: Start[] = EMAIL_STATUSES.flatMap((status): Start[] =>
  status === 'sending'
    ? [
        { status, claimExpired: false },
        { status, claimExpired: true },
      ]
    : [{ status, claimExpired: false }],
);

/** What the walk writes down for one row: its status after, and what the function reported. */
const outcome = (start: Start, after: EmailStatus | undefined, applied: boolean | undefined) =>
  `${start.status}${start.claimExpired ? ' (claim expired)' : ''} → ${after}${applied === undefined ? '' : applied ? ' (applied)' : ' (refused)'}`;

describe('delivery status changes', () => {
  for (const kind of KINDS) {
    for (const event of DELIVERY_EVENTS.filter((candidate) => transitionsOf(kind, candidate).length > 0)) {
      it(`${kind}: ${event} moves each status as the table says`, async () => {
        const expected: string[] = [];
        const actual: string[] = [];
        for (const start of STARTS) {
          const row = await rowIn(kind, start.status, start.claimExpired);
          const applied = await apply[event](kind, row);
          const to = transition(kind, event, start.status, start);
          expected.push(outcome(start, to ?? start.status, applied === undefined ? undefined : to !== undefined));
          actual.push(outcome(start, await statusOf(kind, row.id), applied));
        }
        expect(actual).toEqual(expected);
      });
    }
  }

  it('submission: the batched claim of a worker moves each status as the table says', async () => {
    const expected: string[] = [];
    const actual: string[] = [];
    for (const start of STARTS) {
      const row = await rowIn('submission', start.status, start.claimExpired);
      const [claim] = await claimSubmissions(pool, [row.id], LEASE_MS);
      const to = transition('submission', 'claim', start.status, start);
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

  it('a new key email or webhook delivery starts as the column default the table names', async () => {
    const defaults = await h.sql<{ table_name: string; column_default: string }>(
      `select table_name, column_default from information_schema.columns where column_name = 'email_status' and table_name = any($1)`,
      [[TABLES['key-email'], TABLES.webhook]],
    );
    expect(Object.fromEntries(defaults.map((row) => [row.table_name, row.column_default]))).toEqual({
      [TABLES['key-email']]: `'${CREATED_AS['key-email'].join()}'::text`,
      [TABLES.webhook]: `'${CREATED_AS.webhook.join()}'::text`,
    });
  });
});

describe('the one writer of statuses', () => {
  const sources = readdirSync(path.join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => path.join('src', name));
  const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
  const writingFunctions = sources.filter((file) => file.startsWith(MIGRATIONS)).flatMap((file) => functionsWritingStatus(file, read(file)));

  it('no file under src but the owner module and the migrations writes email_status', () => {
    const elsewhere = sources
      .filter((file) => file !== OWNER && !file.startsWith(MIGRATIONS))
      .flatMap((file) => statusWrites(file, read(file), writingFunctions).map((write) => `${file}:${write.line}: ${write.what}`));
    expect(elsewhere).toEqual([]);
  });

  it('the check finds the owner module’s statements, and the database function that inserts a submission', () => {
    expect(writingFunctions).toEqual(['cfs_insert_submission']);
    const found = statusWrites(OWNER, read(OWNER), writingFunctions).map((write) => write.what);
    expect(new Set(found)).toEqual(new Set(['update … set email_status', 'insert … (email_status)', 'cfs_insert_submission(…), which writes email_status']));
    expect(found.length).toBeGreaterThanOrEqual(18);
  });

  it('the check tells a status write from a status read', () => {
    const sample = [
      "const COLUMNS = 'id, email_status';",
      "const status = `email_status = case when ok then 'sent' else email_status end`;",
      "await em.execute(`update ${table} set claimed_at = null, email_status = 'queued' where id = ?`, [id]);",
      'await em.execute(`insert into submissions (${COLUMNS}) values (?, ?)`, [id, s]);',
      'await db.query(`update key_emails as t set ${status}, sent_at = now() from v where t.id = v.id`);',
      "await db.query(`insert into recipients (mailbox) values ($1) on conflict (mailbox) do update set email_status = 'queued'`);",
      "await em.execute('select cfs_insert_submission(?, ?) as ok', values);",
      "em.create(SubmissionSchema, { email: 'a@example.org', emailStatus: 'queued' });",
      "submission.emailStatus = 'sent';",
      // Reads of the status, which the check must leave alone:
      "await em.execute(`update submissions set email_attempts = case when email_status = 'failed' then 1 else email_attempts + 1 end where id = ? and email_status = 'queued'`);",
      "await em.execute(`update submissions as s set next_attempt_at = v.at from v where s.id = v.id and s.email_status = 'retrying'`);",
      "await em.execute('select email_status from submissions where id = ?', [id]);",
      "const admission = { emailStatus: 'queued' }; if (submission.emailStatus === 'held') remember();",
    ].join('\n');
    expect(statusWrites('sample.ts', sample, ['cfs_insert_submission'])).toEqual([
      { line: 3, what: 'update … set email_status' },
      { line: 4, what: 'insert … (email_status)' },
      { line: 5, what: 'update … set email_status' },
      { line: 6, what: 'update … set email_status' },
      { line: 7, what: 'cfs_insert_submission(…), which writes email_status' },
      { line: 8, what: 'create({ emailStatus })' },
      { line: 9, what: 'entity.emailStatus = …' },
    ]);
  });
});

describe('docs/architecture.md', () => {
  const section = readFileSync(path.join(ROOT, 'docs/architecture.md'), 'utf8').split('\n### Every status change\n')[1]?.split('\n## ')[0] ?? '';
  const cells = (line: string) =>
    line
      .split('|')
      .slice(1, -1)
      .map((cell) => cell.trim());
  const rows = section
    .split('\n')
    .filter((line) => line.startsWith('| ') && !line.startsWith('| Event') && !line.startsWith('| ---'))
    .map(cells);
  const statusesIn = (cell: string) => [...cell.matchAll(/`([a-z-]+)`/g)].map((match) => match[1] as EmailStatus);
  const kindsIn = (cell: string): DeliveryKindName[] => (cell === 'all' ? [...KINDS] : (statusesIn(cell) as string[] as DeliveryKindName[]));

  it('lists exactly the rows of the table of status changes', () => {
    const listed = rows
      .filter(([event]) => event !== '(new row)')
      .flatMap(([event = '', kinds = '', from = '', to = '']) => {
        const froms = from.startsWith('any but')
          ? EMAIL_STATUSES.filter((status) => !statusesIn(from).includes(status))
          : from === 'any'
            ? EMAIL_STATUSES
            : statusesIn(from);
        return kindsIn(kinds).flatMap((kind) =>
          froms.map(
            (status) =>
              `${kind} ${statusesIn(event)[0]} ${status} → ${to === 'unchanged' ? status : statusesIn(to)[0]}${from.includes('(claim expired)') ? ' (claim expired)' : ''}`,
          ),
        );
      });
    const table = TRANSITIONS.map((row) => `${row.kind} ${row.event} ${row.from} → ${row.to}${row.onlyIf === 'claim-expired' ? ' (claim expired)' : ''}`);
    expect(listed.toSorted()).toEqual(table.toSorted());
  });

  it('lists the statuses a new row starts in', () => {
    const listed = rows
      .filter(([event]) => event === '(new row)')
      .flatMap(([, kinds = '', , to = '']) => kindsIn(kinds).map((kind) => [kind, statusesIn(to)] as const));
    expect(Object.fromEntries(listed)).toEqual(CREATED_AS);
  });
});

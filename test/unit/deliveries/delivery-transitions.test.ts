// The table of delivery status changes (src/shared/deliveries/delivery-transitions.ts) against the
// source and the docs: no code but the modules that write every status change
// (src/shared/deliveries/data/: claims.ts, outcomes.ts, releases.ts, copies.ts), the one that saves a new submission with its
// first status (src/shared/submissions/data/submission-inserts.ts) and the migrations writes one, and
// docs/architecture.md lists the table's rows. test/workers/delivery-transitions.test.ts applies
// every change against PostgreSQL.
import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { EMAIL_STATUSES, type EmailStatus } from '../../../src/shared/deliveries/delivery-columns.ts';
import type { DeliveryKindName } from '../../../src/shared/deliveries/delivery-kinds.ts';
import { CREATED_AS, TRANSITIONS, type TransitionCondition } from '../../../src/shared/deliveries/delivery-transitions.ts';
import { functionsWritingStatus, statusWrites } from '../../support/status-writers.ts';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const OWNERS = [
  'src/shared/deliveries/data/claims.ts',
  'src/shared/deliveries/data/outcomes.ts',
  'src/shared/deliveries/data/releases.ts',
  'src/shared/deliveries/data/copies.ts',
  'src/shared/submissions/data/submission-inserts.ts',
];
const MIGRATIONS = 'src/shared/infra/db/migrations/';
const KINDS = ['submission', 'key-email', 'autoresponse', 'recipient-copy', 'webhook'] as const;

describe('the one writer of statuses', () => {
  const sources = readdirSync(path.join(ROOT, 'src'), { recursive: true, encoding: 'utf8' })
    .filter((name) => name.endsWith('.ts'))
    .map((name) => path.join('src', name));
  const read = (file: string) => readFileSync(path.join(ROOT, file), 'utf8');
  const writingFunctions = sources.filter((file) => file.startsWith(MIGRATIONS)).flatMap((file) => functionsWritingStatus(file, read(file)));

  it('no file under src but the owner modules and the migrations writes email_status', () => {
    const elsewhere = sources
      .filter((file) => !OWNERS.includes(file) && !file.startsWith(MIGRATIONS))
      .flatMap((file) => statusWrites(file, read(file), writingFunctions).map((write) => `${file}:${write.line}: ${write.what}`));
    expect(elsewhere).toEqual([]);
  });

  it('the check finds the owner modules’ statements, and the database function that inserts a submission', () => {
    expect(writingFunctions).toEqual(['cfs_insert_submission']);
    const found = OWNERS.flatMap((owner) => statusWrites(owner, read(owner), writingFunctions).map((write) => write.what));
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
  /** How the page writes each condition of the table after the statuses it applies to. */
  const CONDITION_WORDS: Record<TransitionCondition, string> = { 'claim-expired': 'claim expired', 'own-claim': 'own claim' };
  const CONDITIONS = Object.values(CONDITION_WORDS);
  const kindsIn = (cell: string): DeliveryKindName[] => (cell === 'all' ? [...KINDS] : (statusesIn(cell) as string[] as DeliveryKindName[]));

  it('lists exactly the rows of the table of status changes', () => {
    const listed = rows
      .filter(([event]) => event !== '(new row)')
      .flatMap(([event = '', kinds = '', from = '', to = '']) => {
        const condition = CONDITIONS.find((words) => from.endsWith(` (${words})`));
        const froms = from.startsWith('any but')
          ? EMAIL_STATUSES.filter((status) => !statusesIn(from).includes(status))
          : from.replace(` (${condition})`, '') === 'any'
            ? EMAIL_STATUSES
            : statusesIn(from);
        return kindsIn(kinds).flatMap((kind) =>
          froms.map(
            (status) => `${kind} ${statusesIn(event)[0]} ${status} → ${to === 'unchanged' ? status : statusesIn(to)[0]}${condition ? ` (${condition})` : ''}`,
          ),
        );
      });
    const table = TRANSITIONS.map((row) => `${row.kind} ${row.event} ${row.from} → ${row.to}${row.onlyIf ? ` (${CONDITION_WORDS[row.onlyIf]})` : ''}`);
    expect(listed.toSorted()).toEqual(table.toSorted());
  });

  it('lists the statuses a new row starts in', () => {
    const listed = rows
      .filter(([event]) => event === '(new row)')
      .flatMap(([, kinds = '', , to = '']) => kindsIn(kinds).map((kind) => [kind, statusesIn(to)] as const));
    expect(Object.fromEntries(listed)).toEqual(CREATED_AS);
  });
});

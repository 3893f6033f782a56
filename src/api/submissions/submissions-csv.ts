// A key's submissions as CSV, streamed page by page, with one column per custom field name: the
// download of GET /admin/submissions.csv?key=… and of the owner console, which adds its list's filters.
// Each row also says what became of the autoresponse and of each copy to an added recipient.
import { PassThrough } from 'node:stream';
import type { EntityManager } from '@mikro-orm/postgresql';
import type { Submission } from '../../shared/submissions/entities.ts';
import { listSubmissions, type SubmissionPageQuery, customFieldNames } from '../../shared/submissions/submissions.ts';
import { copiesOfSubmissions, type CopyRecord } from '../../shared/recipients/recipients.ts';

/**
 * Rows read at a time. A message with its fields can be about 900 KB, so a page of 50 is at most
 * about 45 MB in memory and one short statement, well within PG_STATEMENT_TIMEOUT_MS.
 */
const PAGE = 50;
const FIXED = [
  'submission_id',
  'created_at',
  'email',
  'subject',
  'message',
  'email_status',
  'sent_at',
  'bounce_type',
  'bounce_status',
  'bounce_diagnostic',
  'bounced_at',
  'spam_verdict',
  'spam_score',
  'spam_reasons',
  'spam_mark',
  'autoresponse',
  'recipient_copies',
] as const;

/**
 * RFC 4180 quoting, and a leading ' on values a spreadsheet would run as a formula. A spreadsheet
 * may split on ; (Excel in most European locales) or a tab instead of the comma: a cell holding one
 * is quoted too, and each piece after one is guarded as a whole value is.
 */
export function csvCell(value: string): string {
  const safe = (/^[=+\-@\t\r]/.test(value) ? `'${value}` : value).replace(/([;\t])(?=[=+\-@\t\r])/g, "$1'");
  return /[",;\t\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

const csvRow = (cells: string[]) => `${cells.map(csvCell).join(',')}\r\n`;

/** The filters of the owner console's list, so that the download holds what the list shows. */
export type CsvFilters = Omit<SubmissionPageQuery, 'keyHash' | 'limit'>;

/**
 * The CSV as a stream that reads the next page only when the last one was taken. `release`: called
 * once the stream has closed (ended, failed, or destroyed when the client went away), to give back
 * the download's slot (../owners/heavy-reads.ts).
 */
export async function submissionsCsv(
  em: EntityManager,
  keyHash: string,
  filters: CsvFilters = {},
  release: () => void = () => undefined,
): Promise<PassThrough> {
  let names: string[];
  try {
    names = await customFieldNames(em, keyHash);
  } catch (error) {
    release();
    throw error;
  }
  const out = new PassThrough();
  out.once('close', release);
  out.write(csvRow([...FIXED, ...names]));
  const write = (submission: Submission, copies: CopyRecord[]) => {
    const values = new Map<string, string[]>();
    for (const [name, value] of submission.customFields) values.set(name, [...(values.get(name) ?? []), value]);
    return out.write(
      csvRow([
        submission.id,
        submission.createdAt.toISOString(),
        submission.email,
        submission.subject,
        submission.message,
        submission.emailStatus,
        submission.sentAt?.toISOString() ?? '',
        submission.bounceType ?? '',
        submission.bounceStatus ?? '',
        submission.bounceDiagnostic ?? '',
        submission.bouncedAt?.toISOString() ?? '',
        submission.spamVerdict ?? '',
        submission.spamScore === null || submission.spamScore === undefined ? '' : String(submission.spamScore),
        (submission.spamReasons ?? []).map((reason) => `${reason.symbol} ${reason.score}`).join('; '),
        submission.spamMark ?? '',
        submission.autoresponse ?? '',
        copies.map((copy) => `${copy.email} ${copy.email_status}`).join(', '),
        // A repeated field keeps all its values in its one column.
        ...names.map((name) => (values.get(name) ?? []).join('\n')),
      ]),
    );
  };
  void (async () => {
    let after: { createdAt: Date; id: string } | undefined;
    for (;;) {
      const { page } = await listSubmissions(em, { ...filters, keyHash, limit: PAGE }, after);
      const copies = await copiesOfSubmissions(
        em,
        page.map((submission) => submission.id),
      );
      for (const submission of page) {
        // A client that went away destroys the stream: no drain comes, and no page more is read.
        if (!write(submission, copies.get(submission.id) ?? [])) await new Promise((resolve) => (out.once('drain', resolve), out.once('close', resolve)));
        if (out.destroyed) return;
      }
      em.clear(); // pages are written out; the identity map need not keep them
      if (page.length < PAGE) break;
      const last = page[page.length - 1]!;
      after = { createdAt: last.createdAt, id: last.id };
    }
    out.end();
  })().catch((error: unknown) => out.destroy(error as Error));
  return out;
}

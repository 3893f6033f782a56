// What the service wrote, read back: the reads that many test files make of a submission or a key
// after the API or a worker acted on it. The factories (./factories.ts) make the rows; these check them.
import type pg from 'pg';
import type { EmailStatus } from '../../src/shared/deliveries/delivery-columns.ts';
import type { KeyStatus } from '../../src/shared/keys/entities.ts';
import type { Harness } from './harness.ts';
import { sleep } from './sleep.ts';

type Db = Pick<Harness, 'sql'>;

/** A submission's row, every column as stored (snake_case); undefined when there is none. */
export async function submissionRow(db: Db, id: string): Promise<pg.QueryResultRow | undefined> {
  return (await db.sql('select * from submissions where id = $1', [id]))[0];
}

export async function submissionExists(db: Db, id: string): Promise<boolean> {
  return (await db.sql('select id from submissions where id = $1', [id])).length === 1;
}

/** Where a submission's email stands (email_status); undefined when the row is gone. */
export async function emailStatusOf(db: Db, id: string): Promise<EmailStatus | undefined> {
  return (await db.sql<{ email_status: EmailStatus }>('select email_status from submissions where id = $1', [id]))[0]?.email_status;
}

/** How many of these submissions are `sent`. */
export async function sentCount(db: Db, ids: string[]): Promise<number> {
  const [row] = await db.sql<{ n: number }>(`select count(*)::int as n from submissions where id = any($1::uuid[]) and email_status = 'sent'`, [ids]);
  return row!.n;
}

/** A key's state (active, disabled, deleted); undefined when there is no such key. */
export async function keyStatusOf(db: Db, keyId: string): Promise<KeyStatus | undefined> {
  return (await db.sql<{ status: KeyStatus }>('select status from verification_keys where id = $1', [keyId]))[0]?.status;
}

/** The tables whose rows are the emails the service sends: each is written before its email is queued. */
const EMAIL_TABLES = ['submissions', 'key_emails', 'recipient_copies', 'autoresponses'];

/**
 * Waits until no email the service took on is still on its way (queued, sending or retrying): each
 * is sent, failed, held or skipped. The SMTP sink records a message before it accepts it, so from
 * then on it holds every email these rows will bring, and a test may say that one did not come.
 */
export async function mailSettled(db: Db, timeoutMs = 30_000): Promise<void> {
  const union = EMAIL_TABLES.map((table) => `select count(*)::int as n from ${table} where email_status in ('queued', 'sending', 'retrying')`).join(
    ' union all ',
  );
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const counts = await db.sql<{ n: number }>(union);
    const pending = counts.reduce((sum, row) => sum + row.n, 0);
    if (pending === 0) return;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${pending} emails still queued, sending or retrying`);
    await sleep(50);
  }
}

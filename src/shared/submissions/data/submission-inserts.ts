// Saving a new submission: its row (with its first status, its admission's: src/api/submissions/admit.ts,
// checked against CREATED_AS of ../../deliveries/delivery-transitions.ts), alone or with its files and webhook
// deliveries. The only write of a status outside the delivery state machine (src/shared/deliveries/data).
import type { EntityManager } from '@mikro-orm/postgresql';
import pg from 'pg';
import type { StatementRunner } from '../../infra/db/pg-pool.ts';
import type { CustomFields } from '../entities.ts';
import type { EmailStatus } from '../../deliveries/delivery-columns.ts';
import { CREATED_AS } from '../../deliveries/delivery-transitions.ts';
import { writeLock } from './submission-rows.ts';

declare const ADMITTED: unique symbol;
/** A webhook delivery made with its submission, in the same statement: its id and its endpoint's. */
export type NewWebhookDelivery = { id: string; endpointId: string };
/**
 * The columns of a submission row, in the order of SUBMISSION_COLUMNS, and the webhook deliveries
 * written with it; made by submissionRow only.
 */
export type SubmissionRow = unknown[] & { readonly [ADMITTED]: true; readonly webhookDeliveries: readonly NewWebhookDelivery[] };
const SUBMISSION_COLUMNS = 'id, key_id, email, message, subject, custom_fields, email_status, client_ip, origin';
const ROW_PLACEHOLDERS = '(?, ?, ?, ?, ?, ?::jsonb, ?, ?, ?)';
const COLUMN_COUNT = 9;

export type NewSubmissionRow = {
  id: string;
  keyId: string;
  email: string;
  message: string;
  subject: string;
  customFields: CustomFields;
  emailStatus: EmailStatus;
  clientIp: string;
  origin: string | undefined;
  /** One per webhook endpoint of the key; none by default. */
  webhookDeliveries?: NewWebhookDelivery[];
};

/** A submission's row, refused (a programming error) unless its status is one a submission is created with. */
export function submissionRow(row: NewSubmissionRow): SubmissionRow {
  if (!CREATED_AS.submission.includes(row.emailStatus)) throw new Error(`a submission is never created ${row.emailStatus}`);
  const columns = [row.id, row.keyId, row.email, row.message, row.subject, JSON.stringify(row.customFields), row.emailStatus, row.clientIp, row.origin ?? null];
  return Object.assign(columns, { webhookDeliveries: row.webhookDeliveries ?? [] }) as unknown as SubmissionRow;
}

/**
 * The webhook deliveries of the rows, written by the same statement as the rows themselves (a
 * data-modifying CTE: `inserted` holds the rows it wrote). A row that was already there (an earlier
 * try whose answer was lost) wrote its deliveries then, so none are written twice. An endpoint
 * disabled or deleted since the key was read gets no row.
 */
const webhookDeliveriesOfInserted = (
  ids: string,
  endpointIds: string,
  submissionIds: string,
) => `insert into webhook_deliveries (id, endpoint_id, submission_id)
         select h.id, h.endpoint_id, h.submission_id
           from unnest(${ids}::uuid[], ${endpointIds}::uuid[], ${submissionIds}::uuid[]) as h(id, endpoint_id, submission_id)
           join inserted on inserted.id = h.submission_id
           join webhook_endpoints e on e.id = h.endpoint_id and e.enabled`;

/** The deliveries of the rows as three parallel arrays: their ids, their endpoints', their submissions'. */
function webhookColumns(rows: SubmissionRow[]): [string[], string[], string[]] | undefined {
  if (!rows.some((row) => row.webhookDeliveries.length > 0)) return undefined;
  const columns: [string[], string[], string[]] = [[], [], []];
  for (const row of rows) {
    for (const delivery of row.webhookDeliveries) {
      columns[0].push(delivery.id);
      columns[1].push(delivery.endpointId);
      columns[2].push(row[0] as string);
    }
  }
  return columns;
}

/** A PostgreSQL array literal of uuids: the ORM's driver would spread a JS array into a list. */
const uuidArray = (ids: string[]) => `{${ids.join(',')}}`;

/**
 * Submissions without files, in one plain INSERT (one implicit transaction, one round trip).
 * Idempotent: a row whose id is already there is left as it is. Each id is a fresh UUID v7 made by
 * the request, so the only row that can hold it is the same submission, written by an earlier try
 * whose answer was lost (a timeout, a broken connection, a shared write retried item by item). A
 * try that finds the earlier one still in progress waits for it on the primary key, so its success
 * means the row is committed, once.
 */
export async function insertSubmissionRows(em: EntityManager, rows: SubmissionRow[]): Promise<void> {
  const insert = `insert into submissions (${SUBMISSION_COLUMNS}) values ${rows.map(() => ROW_PLACEHOLDERS).join(', ')} on conflict (id) do nothing`;
  const webhooks = webhookColumns(rows);
  if (!webhooks) {
    await em.execute(insert, rows.flat());
    return;
  }
  await em.execute(`with inserted as (${insert} returning id) ${webhookDeliveriesOfInserted('?', '?', '?')}`, [...rows.flat(), ...webhooks.map(uuidArray)]);
}

/**
 * The same INSERT for rows written together (the API's group commit), prepared by name: one array
 * per column, so the text is the same whatever the number of rows, and each connection parses and
 * plans it once. The values travel as parameters, not as SQL text built and escaped in the
 * process (docs/benchmarks.md#the-whole-pipeline). Idempotent like insertSubmissionRows.
 */
const INSERT_ROWS_TEXT = `insert into submissions (${SUBMISSION_COLUMNS})
         select * from unnest($1::uuid[], $2::uuid[], $3::text[], $4::text[], $5::text[], $6::jsonb[], $7::text[], $8::text[], $9::text[])
         on conflict (id) do nothing`;
const INSERT_ROWS = { name: 'insert-submissions', text: INSERT_ROWS_TEXT };
/** The same with the rows' webhook deliveries: a batch of which at least one row has some. */
const INSERT_ROWS_AND_WEBHOOKS = {
  name: 'insert-submissions-webhooks',
  text: `with inserted as (${INSERT_ROWS_TEXT} returning id) ${webhookDeliveriesOfInserted('$10', '$11', '$12')}`,
};

export async function insertSubmissionBatch(db: StatementRunner, rows: SubmissionRow[]): Promise<void> {
  const columns: unknown[] = Array.from({ length: COLUMN_COUNT }, (_, column) => rows.map((row) => row[column]));
  const webhooks = webhookColumns(rows);
  await db.query(webhooks ? { ...INSERT_ROWS_AND_WEBHOOKS, values: [...columns, ...webhooks] } : { ...INSERT_ROWS, values: columns });
}

/** A stored file of a new submission, as cfs_insert_submission reads it. */
export type NewAttachmentRow = { field_name: string; filename: string; content_type: string; size: number; storage_key: string; sha256: string };

/**
 * The row, its attachments and its webhook deliveries (the row's, under their ids),
 * in one statement; with `charge`, the files' bytes are charged to the key in it, and nothing is
 * written when that would pass the quota: false then.
 */
export async function insertSubmissionWithFiles(
  em: EntityManager,
  row: SubmissionRow,
  extra: { charge: { bytes: number; quotaBytes: number } | undefined; files: NewAttachmentRow[] },
): Promise<boolean> {
  // One statement: a PL/pgSQL function (migration insert_submission_function) whose statements
  // keep their plans for the session; the same statements as one CTE sent as text were parsed and
  // planned on every request (docs/benchmarks.md).
  const [result] = await em.execute<Array<{ ok: boolean }>>(
    'select cfs_insert_submission(?::bigint, ?::bigint, ?::uuid, ?::uuid, ?, ?, ?, ?::jsonb, ?, ?, ?, ?::uuid[], ?::uuid[], ?::jsonb) as ok',
    [
      // The files' bytes and the key's quota; null for none: no charge without files.
      extra.charge?.bytes ?? null,
      extra.charge?.quotaBytes ?? null,
      ...row,
      uuidArray(row.webhookDeliveries.map((delivery) => delivery.id)),
      uuidArray(row.webhookDeliveries.map((delivery) => delivery.endpointId)),
      JSON.stringify(extra.files),
    ],
  );
  return result?.ok === true;
}

/**
 * insertSubmissionWithFiles as a transaction of its own on `client`, in two round trips. The first
 * begins it, bounds it by `timeoutMs` and takes the submission's write lock (as beginSubmissionWrite
 * does); the second calls the function and commits, in one message. The quota charge locks the key's
 * row, which every submission with files to that key takes in turn: committed by the same message,
 * that lock is held while PostgreSQL runs the call, not also while its answer travels to this process
 * and a COMMIT comes back, which under load was most of each request's wait for it
 * (docs/benchmarks.md#changes-that-moved-a-figure). `locked` is called once the first round trip is
 * answered: from then on a lost answer leaves the outcome open, to be settled by the write lock.
 * After an error PostgreSQL answered, the transaction is rolled back before this rejects.
 */
export async function insertSubmissionWithFilesCommitted(
  client: pg.ClientBase,
  row: SubmissionRow,
  extra: { charge: { bytes: number; quotaBytes: number }; files: NewAttachmentRow[] },
  write: { timeoutMs: number; locked: () => void },
): Promise<boolean> {
  // Simple-query messages carry no parameters: the values go as literals, each escaped by pg.
  const text = (value: unknown) => {
    if (value === null) return 'null';
    if (typeof value !== 'string') throw new Error(`not a text value: ${typeof value}`);
    return pg.escapeLiteral(value);
  };
  const integer = (value: number) => {
    if (!Number.isSafeInteger(value)) throw new Error(`not an integer: ${value}`);
    return String(value);
  };
  const timeout = text(`${integer(write.timeoutMs)}ms`);
  try {
    await client.query(
      `begin; select set_config('statement_timeout', ${timeout}, true), set_config('idle_in_transaction_session_timeout', ${timeout}, true), ` +
        `pg_advisory_xact_lock(hashtext(${text(writeLock(String(row[0])))}))`,
    );
    write.locked();
    const [id, keyId, email, message, subject, customFields, emailStatus, clientIp, origin] = row;
    const results = (await client.query(
      `select cfs_insert_submission(${integer(extra.charge.bytes)}::bigint, ${integer(extra.charge.quotaBytes)}::bigint, ` +
        `${text(id)}::uuid, ${text(keyId)}::uuid, ${text(email)}, ${text(message)}, ${text(subject)}, ${text(customFields)}::jsonb, ` +
        `${text(emailStatus)}, ${text(clientIp)}, ${text(origin)}, ` +
        `${text(uuidArray(row.webhookDeliveries.map((delivery) => delivery.id)))}::uuid[], ` +
        `${text(uuidArray(row.webhookDeliveries.map((delivery) => delivery.endpointId)))}::uuid[], ` +
        `${text(JSON.stringify(extra.files))}::jsonb) as ok; commit`,
    )) as unknown as [pg.QueryResult<{ ok: boolean }>, pg.QueryResult];
    return results[0].rows[0]?.ok === true;
  } catch (error) {
    // PostgreSQL answered with an error (a SQLSTATE): the transaction is open and aborted.
    if (typeof (error as { code?: unknown }).code === 'string' && /^[0-9A-Z]{5}$/.test((error as { code: string }).code))
      await client.query('rollback').catch(() => undefined);
    throw error;
  }
}

/**
 * A test message from the owner console (src/api/owners/test-message.ts): queued for its email
 * like any other, marked `test`; the worker's claim writes its webhook deliveries.
 */
export async function insertTestMessage(
  tx: EntityManager,
  row: { id: string; keyId: string; email: string; subject: string; message: string; customFields: CustomFields },
): Promise<void> {
  await tx.execute(
    `insert into submissions (id, key_id, email, message, subject, custom_fields, email_status, test) values (?, ?, ?, ?, ?, ?::jsonb, ?, true)`,
    [row.id, row.keyId, row.email, row.message, row.subject, JSON.stringify(row.customFields), 'queued' satisfies EmailStatus],
  );
}

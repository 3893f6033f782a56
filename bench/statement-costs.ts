// What PostgreSQL spends on each statement a delivered email costs, and on the guarantees inside
// them, measured as the CPU time of the backends that ran them (from /proc), not as wall time: on a
// busy machine the statements wait for a core, their CPU stays the same.

//   npm run bench:statements -- [--rows=4000] [--rounds=3]

// Rows are saved, claimed and recorded `sent` as the service does (the API's group commit of 8, the
// claims and `sent` writes of 4, the batches a worker makes at a moderate rate), through the
// service's own statements, and again with one guarantee taken out of the `sent` write (the
// statement's text changed on its way to PostgreSQL, so the two cannot drift apart): the delivery
// history's INSERT, the fence on the claim. The autoresponse decision is measured too, the
// transaction that followed every email before its outcome rode on `sent` (it still follows the
// emails of a key that sends one). Rounds alternate the variants; each figure is a median.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { v7 as uuidv7 } from 'uuid';
import { startPostgres } from '../src/local/services.ts';
import { decideAutoresponse } from '../src/shared/autoresponses/autoresponses.ts';
import { createOrm, migrate } from '../src/shared/infra/db/orm.ts';
import { createErasedForm, createKeyVault } from '../src/shared/infra/secrets.ts';
import { generateKey } from '../src/shared/keys/keys.ts';
import { entities } from '../src/shared/schema.ts';
import { claimSubmissions, recordSent, type SubmissionClaim } from '../src/shared/deliveries/deliveries.ts';
import { insertSubmissionBatch, submissionRow } from '../src/shared/submissions/data/submission-inserts.ts';
import { OWNER_MIN_LEARNS } from '../src/shared/spam/spam-filter.ts';
import { BENCH_MESSAGE, BENCH_OWNER, BENCH_SENDER } from './floor/message.ts';

const option = (name: string, fallback: number) => Number(process.argv.find((arg) => arg.startsWith(`--${name}=`))?.slice(name.length + 3) ?? fallback);
const ROWS = option('rows', 4_000);
const ROUNDS = option('rounds', 3);
const INSERT_BATCH = 8;
const DELIVERY_BATCH = 4;
const LEASE_MS = 300_000;

const TICK_MS = 10;
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat
    .slice(stat.lastIndexOf(')') + 2)
    .split(' ')
    .map(Number);
  return (fields[11]! + fields[12]!) * TICK_MS;
}

/** One connection, and its backend's process id: what it runs is what its backend spends. */
async function connection(url: string): Promise<{ client: pg.Client; pid: number }> {
  const client = new pg.Client({ connectionString: url });
  // Ended by the server when the run stops it.
  client.on('error', () => undefined);
  await client.connect();
  const { rows } = await client.query<{ pid: number }>('select pg_backend_pid() as pid');
  return { client, pid: rows[0]!.pid };
}

/** A client whose statements' text is changed on its way (`variant` names the change): the service's statement with one part taken out. */
function rewriting(client: pg.Client, variant: string, rewrite: (text: string) => string): Pick<pg.Pool, 'query'> {
  return {
    query: ((config: pg.QueryConfig) => client.query({ ...config, name: `${config.name ?? 'q'} ${variant}`, text: rewrite(config.text) })) as pg.Pool['query'],
  };
}

const WITHOUT_HISTORY = (text: string) => {
  // The worker's name ($7) stays a parameter of the statement, used by nothing but a test that always holds.
  const changed = text.replace(
    /,\s*logged as \([\s\S]*?from recorded\)\s*select id, created_at, sent_at from recorded/,
    ' select id, created_at, sent_at from recorded where $7::text is not null',
  );
  if (changed === text) throw new Error('the history insert was not found in the `sent` statement');
  return changed;
};
const WITHOUT_FENCE = (text: string) => {
  const changed = text.replace(' and t.claimed_at = v.claimed_at', '');
  if (changed === text) throw new Error('the fence was not found in the `sent` statement');
  return changed;
};

const median = (values: number[]) => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;

const dir = await mkdtemp(path.join(os.tmpdir(), 'cfs-statements-'));
const postgres = await startPostgres({ dir: path.join(dir, 'postgres'), persistent: false, database: 'contact_form' });
try {
  const orm = await createOrm(postgres.url, entities, 2);
  await migrate(orm);
  const vault = createKeyVault(randomBytes(32).toString('base64url'));
  const key = (await generateKey(orm.em.fork(), vault, { email: BENCH_OWNER, emailsPerHour: 1_000 })).key;
  const api = await connection(postgres.url);
  const worker = await connection(postgres.url);
  await api.client.query(`insert into recipients (mailbox, confirmed_at) values ((select mailbox from verification_keys where id = $1), now())`, [key.id]);

  const newRows = () =>
    Array.from({ length: ROWS }, () =>
      submissionRow({
        id: uuidv7(),
        keyId: key.id,
        email: BENCH_SENDER,
        message: BENCH_MESSAGE,
        subject: `New contact form submission from ${BENCH_SENDER}`,
        customFields: [
          ['name', 'Ada Lovelace'],
          ['company', 'Analytical Engines Ltd'],
        ],
        emailStatus: 'queued',
        clientIp: '127.0.0.1',
        origin: undefined,
      }),
    );

  /** Runs `work` over the rows in batches, returning the CPU µs per row of the backend `pid`. */
  async function measure<T>(pid: number, items: T[], batch: number, work: (slice: T[]) => Promise<unknown>): Promise<number> {
    const before = cpuMs(pid);
    for (let start = 0; start < items.length; start += batch) await work(items.slice(start, start + batch));
    return ((cpuMs(pid) - before) * 1000) / items.length;
  }

  type Figures = Record<string, number[]>;
  const figures: Figures = {};
  const note = (name: string, value: number) => (figures[name] ??= []).push(value);

  for (let round = 1; round <= ROUNDS; round += 1) {
    for (const variant of ['as kept', 'without the history insert', 'without the fence'] as const) {
      await api.client.query('truncate submissions cascade');
      await api.client.query('vacuum analyze submissions');
      const rows = newRows();
      const insert = await measure(api.pid, rows, INSERT_BATCH, (slice) => insertSubmissionBatch(api.client, slice));
      const ids = rows.map((row) => row[0] as string);
      const claims: SubmissionClaim[] = [];
      const claim = await measure(worker.pid, ids, DELIVERY_BATCH, async (slice) => {
        for (const claimed of await claimSubmissions(worker.client, slice, LEASE_MS, OWNER_MIN_LEARNS)) claims.push(claimed!);
      });
      const db =
        variant === 'as kept' ? worker.client : rewriting(worker.client, variant, variant === 'without the history insert' ? WITHOUT_HISTORY : WITHOUT_FENCE);
      const sent = await measure(worker.pid, claims, DELIVERY_BATCH, (slice) =>
        recordSent(
          db,
          'submission',
          slice.map((claimed) => ({
            id: claimed.submission.id,
            claim: claimed.claim,
            messageId: `<submission-${claimed.submission.id}@bench.test>`,
            response: '250 2.0.0 Ok: queued',
            autoresponse: 'off',
          })),
          'statement-costs:1',
        ),
      );
      if (variant === 'as kept') {
        note('INSERT (API group commit of 8)', insert);
        note('claim (batches of 4)', claim);
      }
      note(`sent, ${variant} (batches of 4)`, sent);
    }
    // The decision that follows `sent` for a key that sends an autoresponse: a transaction per email (before, for every key).
    await api.client.query('update submissions set autoresponse = null');
    const { rows: sentRows } = await api.client.query<{ id: string }>('select id from submissions');
    const em = orm.em.fork();
    const policy = { mode: 'on', newKeyPerDay: 20, keyPerDay: 200, erasedForm: createErasedForm('statement-costs') } as const;
    // The ORM's connections, opened before measuring.
    await Promise.all(sentRows.slice(0, 2).map((row) => decideAutoresponse(em.fork(), row.id, policy)));
    const { rows: ormPids } = await api.client.query<{ pid: number }>(
      `select pid from pg_stat_activity where datname = current_database() and backend_type = 'client backend' and pid not in ($1, $2)`,
      [api.pid, worker.pid],
    );
    const ormBackends = () => ormPids.reduce((sum, row) => sum + cpuMs(row.pid), 0);
    const before = ormBackends();
    for (const row of sentRows.slice(2, 1_002)) await decideAutoresponse(em.fork(), row.id, policy);
    note('autoresponse decision, a transaction per email', ((ormBackends() - before) * 1000) / 1_000);
  }
  await api.client.end();
  await worker.client.end();
  await orm.close();

  process.stdout.write(`\nPostgreSQL CPU per row, µs (median of ${ROUNDS} rounds of ${ROWS} rows; load average ${os.loadavg()[0]!.toFixed(1)} at the end):\n`);
  for (const [name, values] of Object.entries(figures))
    process.stdout.write(`  ${median(values).toFixed(0).padStart(6)}  ${name}  (${values.map((value) => value.toFixed(0)).join(', ')})\n`);
} finally {
  await postgres.stop();
  await rm(dir, { recursive: true, force: true });
}

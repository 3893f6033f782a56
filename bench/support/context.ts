// What every scenario is handed: the run's settings and findings, and the services it shares
// (PostgreSQL, Redis, S3, the SMTP sink), started here with a verification key to post with.
import { randomBytes } from 'node:crypto';
import { readFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import type { Queue } from 'bullmq';
import { Redis } from 'ioredis';
import pg from 'pg';
import { LOCAL_S3_CREDENTIALS, startPostgres, startRedis } from '../../src/local/services.ts';
import { createOrm, migrate } from '../../src/shared/infra/db/orm.ts';
import { entities } from '../../src/shared/schema.ts';
import { generateKey } from '../../src/shared/keys/keys.ts';
import { createKeyVault } from '../../src/shared/infra/secrets.ts';
import { createDeliveryQueue } from '../../src/shared/infra/queues/queues.ts';
import { type DeliveryJob } from '../../src/shared/deliveries/delivery-jobs.ts';
import { BENCH_OWNER, MAIL_FROM } from '../floor/message.ts';
import { startChatStandIn, type ChatStandIn } from './chat-stand-in.ts';
import { createExtrasKey } from './extras-key.ts';
import { spawnNode, track, waitForMessage } from './proc.ts';
import type { Row } from './report.ts';
import { startSink, type Sink } from './sink.ts';

export const CLIENTS = 64;
/** Scenario 1's comparison with the PK-only floor: a site's busy minute, one connection per visitor. */
export const INTAKE_GOAL_CLIENTS = 32;
export const MAX_REQUESTS = 300_000; // per load phase, beside the time bound
export const WORKER_CONCURRENCY = 50;
export const QUEUE_PREFIX = '{bench}';
export const FLOOR_PREFIX = '{floor}';
/** The floor's table with the submission columns and only a primary key: what the schema costs is the difference. */
export const FLOOR_PK_TABLE = 'floor_pk_submissions';
/** The owner of the second key, a mailbox that never confirms (scenario 1's unconfirmed row). */
export const UNCONFIRMED_OWNER = 'unconfirmed-owner@example.test';
export const BUCKET = 'cfs-bench';
export const MB = 1024 * 1024;

/** The sizes of a run: its windows, repeats, backlogs and caps (smaller with --quick). */
export type Settings = {
  warmupMs: number;
  measureMs: number;
  repeats: number;
  backlog: number;
  deliveryWarmup: number;
  deliveryRepeats: number;
  workerCounts: number[];
  uploadClients: number;
  bigEmails: number;
  growthRows: number;
  drainCapMs: number;
  kills: number;
  /** DSNs sent to the bounce receiver (and to its floor) after the warm-up. */
  dsns: number;
  /** Scenario 12: each side's warm-up and measured window, and how many of each side, alternating. */
  pipelineWarmupMs: number;
  pipelineMeasureMs: number;
  pipelineRepeats: number;
};

/** What a run was asked for and what it has found so far; it exists before the services do. */
export type Run = {
  S: Settings;
  quick: boolean;
  /** --node-flags: Node flags for every process under test. */
  nodeFlags: string[];
  /** --one-core: scenario 1 also measures its PK-only comparison with each side's processes on CPU 0 (./affinity.ts). */
  oneCore: boolean;
  /** --pk-floor-only: scenario 1 measures only its comparison with the PK-only floor (at INTAKE_GOAL_CLIENTS). */
  pkFloorOnly: boolean;
  /** With --profile: where the V8 CPU profiles go. */
  profileDir: string | undefined;
  /** With --pg-statements: PostgreSQL keeps statement statistics (pg_stat_statements), which scenario 12 reports. */
  pgStatements: boolean;
  sinkDelayMs: number;
  /** The operator token: a worker serves its metrics only with it. */
  adminToken: string;
  started: number;
  rows: Row[];
  notes: string[];
  /** The CPU lines printed below the table. */
  cpuTable: string[];
  log: (message: string) => void;
};

export type Ctx = Run & {
  env: Record<string, string>;
  sql: pg.Pool;
  redis: Redis;
  queue: Queue<DeliveryJob>;
  sink: Sink;
  keyId: string;
  accessKey: string;
  /** A key whose mailbox has not confirmed: past its hourly allowance, its submissions are held. */
  unconfirmedKey: string;
  /** A key of the same owner whose captcha is ALTCHA. */
  altchaKey: { id: string; value: string };
  /** A key of the same owner with an autoresponse, 5 confirmed added recipients and a Slack channel (./extras-key.ts). */
  extrasKey: { id: string; value: string };
  /** The same extras but the chat channel: what intake pays for the channel alone is the difference. */
  extrasWithoutChatKey: { id: string; value: string };
  /** The extras key's extras on an operator's high-volume key, its autoresponse sent to every visitor (scenario 13; ./extras-key.ts). */
  highVolumeKey: { id: string; value: string };
  /** Where the extras key's Slack channel posts. */
  chat: ChatStandIn;
  postgresPid: () => number;
  redisPid: number;
  s3Pid: number;
  s3: S3Client;
};

export async function startServices(run: Run, dir: string): Promise<Ctx> {
  run.log('starting PostgreSQL, Redis, S3 and the SMTP sink');
  const postgres = await startPostgres({
    dir: path.join(dir, 'postgres'),
    persistent: false,
    database: 'contact_form',
    ...(run.pgStatements ? { settings: ['shared_preload_libraries=pg_stat_statements', 'pg_stat_statements.track=all'] } : {}),
  });
  track({ name: 'postgres', stop: postgres.stop });
  const redisService = await startRedis();
  track({ name: 'redis', stop: redisService.stop, pid: redisService.child.pid });
  const s3Child = await spawnNode({
    name: 's3rver',
    script: 'bench/support/s3-process.ts',
    env: { S3_DIR: path.join(dir, 's3'), S3_BUCKET: BUCKET },
    ipc: true,
  });
  const { url: s3Url } = await waitForMessage<{ type: 'ready'; url: string }>(s3Child, 'ready');
  const sink = await startSink(run.sinkDelayMs);
  const chat = await startChatStandIn();
  track({ name: 'chat stand-in', stop: chat.close });

  // The key is made by the service's own code, so the benchmark follows the schema as it changes.
  const secret = randomBytes(32).toString('base64url');
  const orm = await createOrm(postgres.url, entities, 1);
  let accessKey: string;
  let keyId: string;
  let unconfirmedKey: string;
  let altchaKey: Ctx['altchaKey'];
  let extrasKey: Ctx['extrasKey'];
  let extrasWithoutChatKey: Ctx['extrasWithoutChatKey'];
  let highVolumeKey: Ctx['highVolumeKey'];
  try {
    await migrate(orm);
    const created = await generateKey(orm.em.fork(), createKeyVault(secret), { email: BENCH_OWNER, emailsPerHour: 1_000 });
    accessKey = created.keyValue;
    keyId = created.key.id;
    unconfirmedKey = (await generateKey(orm.em.fork(), createKeyVault(secret), { email: UNCONFIRMED_OWNER, emailsPerHour: 1_000 })).keyValue;
    const altcha = await generateKey(orm.em.fork(), createKeyVault(secret), { email: BENCH_OWNER, emailsPerHour: 1_000 });
    altchaKey = { id: altcha.key.id, value: altcha.keyValue };
    extrasKey = await createExtrasKey(orm, createKeyVault(secret), 'team.example', { chatUrl: chat.url });
    extrasWithoutChatKey = await createExtrasKey(orm, createKeyVault(secret), 'other-team.example');
    // Its captcha would refuse scenario 1's posts to the extras key, which carry no answer.
    highVolumeKey = await createExtrasKey(orm, createKeyVault(secret), 'busy-team.example', { chatUrl: chat.url, highVolume: true });
  } finally {
    await orm.close();
  }
  const sql = new pg.Pool({ connectionString: postgres.url, max: 4 });
  track({ name: 'sql pool', stop: () => sql.end() });
  if (run.pgStatements) await sql.query('create extension if not exists pg_stat_statements');
  // The keys' own emails (and the added recipients' requests to confirm) are not part of any scenario.
  await sql.query('delete from key_emails');
  // The usual case: a mailbox that confirmed it wants the mail (docs/api.md "Recipient consent"). An
  // unconfirmed one pays an allowance upsert in a transaction per request and, past
  // UNCONFIRMED_EMAILS_PER_HOUR, holds the submissions without enqueueing them.
  await sql.query(`insert into recipients (mailbox, confirmed_at) values ((select mailbox from verification_keys where id = $1), now())`, [keyId]);
  await sql.query(`update verification_keys set captcha = 'altcha' where id = $1`, [altchaKey.id]);
  await sql.query(`create table ${FLOOR_PK_TABLE} (like submissions including defaults)`);
  await sql.query(`alter table ${FLOOR_PK_TABLE} add primary key (id)`);
  const redis = new Redis(redisService.url, { maxRetriesPerRequest: null });
  track({
    name: 'redis client',
    stop: async () => {
      redis.disconnect();
    },
  });
  const queue = createDeliveryQueue<DeliveryJob>(redis, { QUEUE_PREFIX });
  track({ name: 'queue', stop: () => queue.close() });
  const s3 = new S3Client({
    region: 'us-east-1',
    endpoint: s3Url,
    forcePathStyle: true,
    credentials: LOCAL_S3_CREDENTIALS,
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
  track({ name: 's3 client', stop: async () => s3.destroy() });

  const postmasterPid = Number(readFileSync(path.join(dir, 'postgres', 'postmaster.pid'), 'utf8').split('\n')[0]);
  return {
    ...run,
    env: {
      HOST: '127.0.0.1',
      PORT: '0',
      DATABASE_URL: postgres.url,
      REDIS_URL: redisService.url,
      S3_ENDPOINT: s3Url,
      S3_BUCKET: BUCKET,
      S3_ACCESS_KEY_ID: LOCAL_S3_CREDENTIALS.accessKeyId,
      S3_SECRET_ACCESS_KEY: LOCAL_S3_CREDENTIALS.secretAccessKey,
      SMTP_URL: sink.url,
      MAIL_FROM,
      QUEUE_PREFIX,
      // The limiter runs on every request (one Redis script each); each client has its own
      // address, and the ceiling is high enough that nobody is refused.
      RATE_LIMIT_MAX: '1000000',
      // Every accepted file counts against the key's quota, and nothing is deleted during a run:
      // each of scenario 2's requests stores 300 KB, and the default 1 GB fills within its second
      // repeat.
      KEY_STORAGE_QUOTA_MB: '1000000',
      WORKER_CONCURRENCY: String(WORKER_CONCURRENCY),
      SECRET: secret,
      // A worker serves its metrics (scenario 3's duplicate window) only with the operator token.
      ADMIN_TOKEN: run.adminToken,
      LOG_LEVEL: 'info',
    },
    sql,
    redis,
    queue,
    sink,
    keyId,
    accessKey,
    unconfirmedKey,
    altchaKey,
    extrasKey,
    extrasWithoutChatKey,
    highVolumeKey,
    chat,
    postgresPid: () => postmasterPid,
    redisPid: redisService.child.pid!,
    s3Pid: s3Child.pid,
    s3,
  };
}

export async function machineLine(ctx: Ctx): Promise<string> {
  const cpus = os.cpus();
  const { rows: pgRows } = await ctx.sql.query<{ server_version: string }>('show server_version');
  const info = await ctx.redis.info('server');
  const redisVersion = /redis_version:(\S+)/.exec(info)?.[1] ?? '?';
  return (
    `Machine: ${cpus.length} cores (${cpus[0]?.model.trim() ?? '?'}), ${(os.totalmem() / 1024 ** 3).toFixed(0)} GB RAM, ` +
    `load average ${os.loadavg()[0]!.toFixed(2)} at start; Node ${process.versions.node}, ` +
    `PostgreSQL ${pgRows[0]!.server_version}, Redis ${redisVersion}`
  );
}

/** The tables that hold submissions and what hangs off them: emptied together, as their foreign keys require. */
export const SUBMISSION_TABLES =
  'submissions, attachments, webhook_deliveries, delivery_attempts, autoresponses, recipient_copies, spam_teachings, idempotency_keys';

/** Empties the tables the scenarios fill and every Redis key (no worker may be running). */
export async function resetState(ctx: Ctx): Promise<void> {
  // address_bounces and mailbox_complaints too: the bounce scenario's hard bounces would suppress
  // the key's address, and the next scenario's emails would not be attempted; spam_campaign_votes,
  // so that one scenario's marks hold nothing in the next.
  await ctx.sql.query(`truncate ${SUBMISSION_TABLES}, spam_campaign_votes, address_bounces, mailbox_complaints, ${FLOOR_PK_TABLE}`);
  await ctx.redis.flushall();
}

/**
 * Empties the tables and Redis, then writes out what the last phase left in PostgreSQL's buffers
 * (a checkpoint) now rather than inside the next measured window: every side of a comparison starts
 * from the same state, whatever ran before it. No VACUUM or ANALYZE: statistics of an empty table
 * would make a new connection plan its foreign-key checks as scans of the whole table.
 */
export async function freshPhase(ctx: Ctx): Promise<void> {
  await resetState(ctx);
  await ctx.sql.query('checkpoint');
}

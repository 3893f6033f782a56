// One test file's private world on the shared services: its own database (copied from the migrated
// template), bucket, queue prefix and SMTP sink, plus the API and a worker started in-process.
import { randomBytes, randomUUID } from 'node:crypto';
import { CreateBucketCommand, DeleteBucketCommand, ListObjectsV2Command } from '@aws-sdk/client-s3';
import { Redis } from 'ioredis';
import pg from 'pg';
import { inject } from 'vitest';
import { startApi, type ApiProcess } from '../../src/api/server.ts';
import { loadConfig, type Config } from '../../src/shared/infra/config.ts';
import { VerificationKeySchema, type VerificationKey } from '../../src/shared/keys/entities.ts';
import type { MikroORM } from '../../src/shared/infra/db/orm.ts';
import { createLogger, type Logger } from '../../src/shared/infra/log.ts';
import { mailboxOf } from '../../src/shared/keys/consent.ts';
import { createKeyVault, type KeyVault } from '../../src/shared/infra/secrets.ts';
import { createStorage, type Storage } from '../../src/shared/infra/storage.ts';
import { startWorker, type WorkerProcess } from '../../src/workers/worker.ts';
import { startBounceReceiver, type BounceProcess } from '../../src/bounces/process.ts';
import { buildKey, type KeyOverrides, type KeyRow } from './factories.ts';
import { jsonOrUndefined } from './http.ts';
import { startSmtpSink, type SmtpSink } from './smtp-sink.ts';
import { sleep } from './sleep.ts';

export type Harness = {
  config: Config;
  env: Record<string, string>;
  api: ApiProcess;
  /** Base URL of the API, e.g. http://127.0.0.1:41234 */
  url: string;
  orm: MikroORM;
  storage: Storage;
  /** Replaceable: a test that restarts the SMTP server puts the new sink here for stop(). */
  sink: SmtpSink;
  workers: WorkerProcess[];
  startWorker: () => Promise<WorkerProcess>;
  /** Starts a bounce receiver for the harness's BOUNCE_DOMAIN (the test sets it) on `port` (0: a free one); stopped with the rest. */
  startBounces: (port?: number) => Promise<BounceProcess>;
  /** A key stored as the service stores one (test/support/factories.ts buildKey). */
  createKey: (fields?: KeyOverrides) => Promise<KeyRow>;
  /** The lookup index stored for a key value (key_hash). */
  hashKey: (value: string) => string;
  /** Runs one SQL query against this file's database. */
  sql: <T extends pg.QueryResultRow = pg.QueryResultRow>(text: string, values?: unknown[]) => Promise<T[]>;
  stop: () => Promise<void>;
};

type KeyFields = Partial<Pick<VerificationKey, 'email' | 'status' | 'useDomain' | 'domains' | 'captcha'>>;

/** A key created by the fixture: its row and its plain value. */
export type TestKey = { id: string; key: string; email: string };

/** `log`: the API's logger instead of the silent default (a test that reads the log). */
export type HarnessOptions = {
  env?: Record<string, string>;
  worker?: boolean;
  log?: Logger;
  /** The SMTP_URL carries this user and password (the sink accepts any unless told to refuse). */
  smtpLogin?: { user: string; pass: string };
};

const suffix = () => randomBytes(5).toString('hex');
export const TEST_SECRET = 'test-secret-test-secret-test-secret-0123';
const log = createLogger('test', process.env.TEST_LOG_LEVEL ?? 'silent');

export function withDatabase(url: string, database: string): string {
  const parsed = new URL(url);
  parsed.pathname = `/${database}`;
  return parsed.toString();
}

/**
 * Drops a test file's database once its own connections are gone. Pools that were just closed may
 * still be ending their sockets; FORCE would terminate those, and the client would raise
 * "terminating connection due to administrator command" unhandled, failing the run. So wait a
 * little (at most 3 s) for them first; FORCE then only ends what a test leaked.
 */
async function dropDatabase(database: string): Promise<void> {
  const admin = new pg.Client({ connectionString: inject('postgresUrl') });
  await admin.connect();
  try {
    for (let i = 0; i < 60; i++) {
      const { rows } = await admin.query<{ n: number }>('select count(*)::int as n from pg_stat_activity where datname = $1', [database]);
      if (rows[0]?.n === 0) break;
      await sleep(50);
    }
    await admin.query(`DROP DATABASE IF EXISTS ${database} WITH (FORCE)`);
  } finally {
    await admin.end();
  }
}

async function adminQuery(text: string): Promise<void> {
  const admin = new pg.Client({ connectionString: inject('postgresUrl') });
  await admin.connect();
  try {
    await admin.query(text);
  } finally {
    await admin.end();
  }
}

/** A database of the test's own on the shared PostgreSQL: empty, or a copy of the migrated template. */
export async function testDatabase(options: { migrated: boolean }): Promise<{ url: string; drop: () => Promise<void> }> {
  const database = `cfs_t_${suffix()}`;
  await adminQuery(`CREATE DATABASE ${database}${options.migrated ? ` TEMPLATE ${inject('templateDatabase')}` : ''}`);
  return { url: withDatabase(inject('postgresUrl'), database), drop: () => dropDatabase(database) };
}

export async function startHarness(options: HarnessOptions = {}): Promise<Harness> {
  const database = await testDatabase({ migrated: true });
  const bucket = `cfs-t-${suffix()}`;
  const sink = await startSmtpSink();

  const env: Record<string, string> = {
    HOST: '127.0.0.1',
    PORT: '0',
    DATABASE_URL: database.url,
    REDIS_URL: inject('redisUrl'),
    S3_ENDPOINT: inject('s3Endpoint'),
    S3_BUCKET: bucket,
    S3_ACCESS_KEY_ID: inject('s3AccessKeyId'),
    S3_SECRET_ACCESS_KEY: inject('s3SecretAccessKey'),
    SMTP_URL: options.smtpLogin ? sink.url.replace('smtp://', `smtp://${options.smtpLogin.user}:${options.smtpLogin.pass}@`) : sink.url,
    MAIL_FROM: 'Contact Form <forms@example.test>',
    SECRET: TEST_SECRET,
    QUEUE_PREFIX: `{t${suffix()}}`,
    WORKER_CONCURRENCY: '8',
    EMAIL_RETRY_BACKOFF_MS: '200',
    // Most tests send many requests from one address; the rate-limit tests set their own limit.
    RATE_LIMIT_MAX: '1000000',
    KEY_EMAILS_PER_HOUR: '1000',
    SIGN_IN_EMAILS_PER_HOUR: '1000',
    SIGN_IN_LINK_USES_PER_MINUTE: '1000000',
    // Keys made here belong to unconfirmed mailboxes; the consent tests set their own allowance.
    UNCONFIRMED_EMAILS_PER_HOUR: '1000000',
    LOG_LEVEL: process.env.TEST_LOG_LEVEL ?? 'silent',
    ...options.env,
  };
  const config = loadConfig(env);
  const storage = createStorage(config);
  await storage.client.send(new CreateBucketCommand({ Bucket: bucket }));

  const api = await startApi(config, options.log ?? log);
  const orm = api.deps.orm;
  const workers: WorkerProcess[] = [];
  const addWorker = async () => {
    const worker = await startWorker(config, log);
    workers.push(worker);
    return worker;
  };
  if (options.worker !== false) await addWorker();
  const receivers: BounceProcess[] = [];

  const vault = createKeyVault(config.SECRET);
  const pool = new pg.Pool({ connectionString: env.DATABASE_URL, max: 2 });
  // An idle connection lost (PostgreSQL killed or restarted by a test) is dropped; the next query opens another.
  pool.on('error', () => undefined);

  const harness: Harness = {
    config,
    env,
    api,
    url: api.url,
    orm,
    storage,
    sink,
    workers,
    startWorker: addWorker,
    async startBounces(port = 0) {
      if (!config.BOUNCE_DOMAIN) throw new Error('set BOUNCE_DOMAIN in the harness env to start a bounce receiver');
      const receiver = await startBounceReceiver(
        { ...config, BOUNCE_DOMAIN: config.BOUNCE_DOMAIN, BOUNCE_SMTP_HOST: '127.0.0.1', BOUNCE_SMTP_PORT: port },
        log,
      );
      receivers.push(receiver);
      return receiver;
    },
    createKey: (fields = {}) => buildKey(harness, fields),
    hashKey: (value) => vault.hash(value),
    async sql(text, values) {
      const result = await pool.query(text, values);
      return result.rows;
    },
    async stop() {
      for (const receiver of receivers) await receiver.shutdown.run();
      for (const worker of workers) await worker.shutdown.run();
      await api.shutdown.run();
      await pool.end();
      await harness.sink.close().catch(() => undefined);
      await emptyBucket(storage, bucket);
      storage.close();
      // A Redis Cluster or a Redis behind sentinels is the test's own, thrown away with its nodes
      // (the one REDIS_URL names perhaps killed).
      if (!config.REDIS_SENTINELS && !config.REDIS_CLUSTER) await deleteQueueKeys(config.REDIS_URL, config.QUEUE_PREFIX);
      await database.drop();
    },
  };
  return harness;
}

/** Saves a key as the admin API would, with its value sealed under `vault`'s SECRET. */
export async function insertKey(orm: MikroORM, vault: KeyVault, fields: KeyFields = {}): Promise<TestKey> {
  const em = orm.em.fork();
  const value = randomUUID();
  const email = fields.email ?? `owner-${suffix()}@example.test`;
  const key = em.create(VerificationKeySchema, {
    keyHash: vault.hash(value),
    keyEncrypted: vault.encrypt(value),
    email,
    mailbox: mailboxOf(email),
    status: fields.status ?? 'active',
    useDomain: fields.useDomain ?? false,
    domains: fields.domains ?? [],
    captcha: fields.captcha ?? null,
    emailFieldOrder: [],
    emailHiddenFields: [],
  });
  await em.flush();
  return { id: key.id, key: value, email: key.email };
}

/** The keys of every object in the bucket: what a test checks to prove nothing was left behind. */
export async function listObjectKeys(storage: Storage): Promise<string[]> {
  const listed = await storage.client.send(new ListObjectsV2Command({ Bucket: storage.bucket }));
  return (listed.Contents ?? []).map((object) => object.Key ?? '');
}

async function emptyBucket(storage: Storage, bucket: string): Promise<void> {
  const keys = await listObjectKeys(storage);
  if (keys.length) await storage.remove(keys);
  await storage.client.send(new DeleteBucketCommand({ Bucket: bucket }));
}

/** Deletes every Redis key of a queue prefix. */
export async function deleteQueueKeys(redisUrl: string, prefix: string): Promise<void> {
  const redis = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  try {
    let cursor = '0';
    do {
      const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
      cursor = next;
      if (keys.length) await redis.del(...keys);
    } while (cursor !== '0');
  } finally {
    redis.disconnect();
  }
}

/** Polls until `check` returns a value other than undefined, or fails after `timeoutMs`. */
export async function eventually<T>(check: () => Promise<T | undefined>, timeoutMs = 20_000, what = 'condition'): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(50);
  }
}

export async function postJson(url: string, body: unknown, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.text();
  return { status: response.status, headers: response.headers, json: jsonOrUndefined(text), text };
}

// Starts the real services once for the whole run, on free loopback ports, and stops them after.
// Each test file then takes its own database, bucket, queue prefix and SMTP sink (test/support/harness.ts).
// DATABASE_URL, REDIS_URL and S3_ENDPOINT, when set, name external services to use instead.
// First it finds (or, on Debian/Ubuntu as root, installs) the system programs some tests need.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import pg from 'pg';
import type { TestProject } from 'vitest/node';
import { createOrm, migrate } from '../../src/shared/infra/db/orm.ts';
import { entities } from '../../src/shared/schema.ts';
import { LOCAL_S3_CREDENTIALS, startPostgres, startRedis, startS3, type LocalService } from '../../src/local/services.ts';
import { clamdTool } from '../../src/local/clamd.ts';
import { chromiumTool, ensureSystemTools, type SystemTool, type ToolLookup } from '../../src/local/system-tools.ts';

declare module 'vitest' {
  // An interface: this declaration merges into vitest's own.
  // eslint-disable-next-line @typescript-eslint/consistent-type-definitions
  export interface ProvidedContext {
    /** Admin URL of the PostgreSQL server; test files create their databases from the template. */
    postgresUrl: string;
    templateDatabase: string;
    redisUrl: string;
    s3Endpoint: string;
    s3AccessKeyId: string;
    s3SecretAccessKey: string;
    /** Where each program of TEST_TOOLS is, or why it is missing (the tests that need it fail with that). */
    testTools: Record<string, ToolLookup>;
  }
}

/** System programs that npm cannot provide, and the tests that need them. */
export const TEST_TOOLS: SystemTool[] = [
  chromiumTool('the browser tests (test/e2e/browser.test.ts)'),
  { binary: 'docker-compose', package: 'docker-compose', neededFor: 'the compose file check (test/compose.test.ts)', pathVariable: 'DOCKER_COMPOSE' },
  { binary: 'postfix', package: 'postfix', neededFor: 'the bounce tests against a real relay (test/bounces/postfix.test.ts)', pathVariable: 'POSTFIX_PATH' },
  { binary: 'rspamd', package: 'rspamd', neededFor: 'the spam filter tests (test/spam)', pathVariable: 'RSPAMD_PATH' },
  clamdTool('the file scanning tests, against a real clamd (test/support/clamd.ts)'),
  { binary: 'haproxy', package: 'haproxy', neededFor: 'the load balancer test (test/faults/load-balancer.test.ts)', pathVariable: 'HAPROXY_PATH' },
  {
    binary: 'pgbouncer',
    package: 'pgbouncer',
    neededFor: 'the connection pooler test (test/faults/pgbouncer.test.ts)',
    pathVariable: 'PGBOUNCER_PATH',
    systemServices: ['pgbouncer'],
  },
  {
    binary: 'promtool',
    package: 'prometheus',
    neededFor: 'the alert rules check (test/ops/monitoring-files.test.ts)',
    pathVariable: 'PROMTOOL_PATH',
    // The package starts a Prometheus server where systemd runs; only promtool is wanted.
    systemServices: ['prometheus'],
  },
  { binary: 'ip', package: 'iproute2', neededFor: 'the partition tests between hosts in network namespaces (test/faults/partitions.test.ts)' },
  { binary: 'openssl', package: 'openssl', neededFor: "the bounce receiver's STARTTLS test (test/bounces/receiver.test.ts), to make a certificate" },
  {
    binary: 'kubectl',
    package: 'kubernetes-client',
    neededFor: 'the Kubernetes manifests check (test/deploy/kubernetes.test.ts), which renders them with `kubectl kustomize`',
    pathVariable: 'KUBECTL_PATH',
    alternative:
      'or, on Debian 12, whose package is too old (kubectl 1.20), kubectl 1.27 or later from https://kubernetes.io/docs/tasks/tools/ with KUBECTL_PATH set to it',
  },
];

export const TEMPLATE_DATABASE = 'cfs_test_template';

export default async function setup(project: TestProject) {
  const testTools = ensureSystemTools(TEST_TOOLS);
  for (const { problem } of Object.values(testTools)) {
    // Said once here, and again by each test that needs the program (those tests fail).
    if (problem) process.stderr.write(`\n${problem}\n`);
  }
  project.provide('testTools', testTools);
  const started: LocalService[] = [];
  const dir = await mkdtemp(path.join(tmpdir(), 'cfs-test-'));
  const stopAll = async () => {
    for (const service of started.splice(0).reverse()) await service.stop().catch(() => undefined);
    await rm(dir, { recursive: true, force: true });
  };
  // Interrupted runs (Ctrl+C, a CI timeout) skip the teardown: stop the servers here instead.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => void stopAll().finally(() => process.exit(130)));
  }
  try {
    let postgresUrl = process.env.DATABASE_URL;
    if (!postgresUrl) {
      const postgres = await startPostgres({ dir: path.join(dir, 'postgres'), persistent: false, database: 'postgres' });
      started.push(postgres);
      postgresUrl = postgres.url;
    }
    let redisUrl = process.env.REDIS_URL;
    if (!redisUrl) {
      const redis = await startRedis();
      started.push(redis);
      redisUrl = redis.url;
    }
    let s3Endpoint = process.env.S3_ENDPOINT;
    if (!s3Endpoint) {
      const s3 = await startS3({ dir: path.join(dir, 's3'), bucket: 'cfs-test-default' });
      started.push(s3);
      s3Endpoint = s3.url;
    }

    await createTemplateDatabase(postgresUrl);

    project.provide('postgresUrl', postgresUrl);
    project.provide('templateDatabase', TEMPLATE_DATABASE);
    project.provide('redisUrl', redisUrl);
    project.provide('s3Endpoint', s3Endpoint);
    project.provide('s3AccessKeyId', process.env.S3_ACCESS_KEY_ID ?? LOCAL_S3_CREDENTIALS.accessKeyId);
    project.provide('s3SecretAccessKey', process.env.S3_SECRET_ACCESS_KEY ?? LOCAL_S3_CREDENTIALS.secretAccessKey);
  } catch (error) {
    await stopAll();
    throw error;
  }
  return stopAll;
}

/** A migrated database that each test file copies (CREATE DATABASE ... TEMPLATE) for a clean start. */
async function createTemplateDatabase(adminUrl: string): Promise<void> {
  const admin = new pg.Client({ connectionString: adminUrl });
  await admin.connect();
  try {
    await admin.query(`DROP DATABASE IF EXISTS ${TEMPLATE_DATABASE} WITH (FORCE)`);
    await admin.query(`CREATE DATABASE ${TEMPLATE_DATABASE}`);
  } finally {
    await admin.end();
  }
  const url = new URL(adminUrl);
  url.pathname = `/${TEMPLATE_DATABASE}`;
  const orm = await createOrm(url.toString(), entities, 1);
  try {
    await migrate(orm);
  } finally {
    await orm.close();
  }
}

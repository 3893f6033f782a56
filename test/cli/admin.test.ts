// `npm run admin -- keys …`, `webhooks …` and `deliveries flush`: the operator CLI over the same
// rules as the API.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fromNow, updateSubmission } from '../support/factories.ts';
import { startHarness, type Harness } from '../support/harness.ts';
import { submitJson } from '../support/client.ts';
import { createDeliveryQueue } from '../../src/shared/infra/queues/queues.ts';
import { submissionJob, type DeliveryJob } from '../../src/shared/deliveries/delivery-jobs.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
// One command through npm takes about 2 s; beside two busy loops a single one outlasted 30 s.
const CLI_LIMIT_MS = 60_000;
// A test runs up to eight commands.
const CLI_TEST_LIMIT_MS = 8 * CLI_LIMIT_MS;
let h: Harness;
beforeAll(async () => {
  h = await startHarness({ worker: false });
});
afterAll(() => h?.stop());

function cli(...args: string[]) {
  const result = spawnSync('npm', ['run', '--silent', 'admin', '--', ...args], {
    cwd: ROOT,
    env: { ...process.env, DATABASE_URL: h.env.DATABASE_URL, SECRET: h.env.SECRET, REDIS_URL: h.env.REDIS_URL, QUEUE_PREFIX: h.env.QUEUE_PREFIX },
    encoding: 'utf8',
    timeout: CLI_LIMIT_MS,
  });
  return { status: result.status, stdout: result.stdout, stderr: result.stderr };
}

const statusOf = async (key: string) =>
  (await h.sql<any>('select status, use_domain, domains from verification_keys where key_hash = $1', [h.hashKey(key)]))[0];

describe('npm run admin -- keys', { timeout: CLI_TEST_LIMIT_MS }, () => {
  it('lists, disables, enables and deletes keys', async () => {
    const key = await h.createKey({ email: 'cli@example.test' });

    const list = cli('keys', 'list', 'CLI@example.test');
    expect(list.status).toBe(0);
    expect(list.stdout).toContain(key.key);
    expect(list.stdout).toContain('active');

    expect(cli('keys', 'disable', key.key).status).toBe(0);
    expect((await statusOf(key.key)).status).toBe('disabled');
    expect(cli('keys', 'enable', key.key).status).toBe(0);
    expect((await statusOf(key.key)).status).toBe('active');
    expect(cli('keys', 'delete', key.key).status).toBe(0);
    expect((await statusOf(key.key)).status).toBe('deleted');

    const refused = cli('keys', 'enable', key.key);
    expect(refused.status).toBe(1);
    expect(refused.stderr).toContain('A deleted key cannot become active.');
  });

  it('sets and clears the domains of a key', async () => {
    const key = await h.createKey();
    expect(cli('keys', 'domains', key.key, 'Example.com', 'shop.example.org').status).toBe(0);
    expect(await statusOf(key.key)).toEqual({ status: 'active', use_domain: true, domains: ['example.com', 'shop.example.org'] });
    expect(cli('keys', 'domains', key.key, 'https://bad.example').status).toBe(1);
    expect(cli('keys', 'domains', key.key).status).toBe(0);
    expect((await statusOf(key.key)).use_domain).toBe(false);
  });

  it('reports an unknown key and prints usage for a bad command', () => {
    const unknown = cli('keys', 'disable', 'no-such-key');
    expect(unknown.status).toBe(1);
    expect(unknown.stderr).toContain('Unknown key.');
    const usage = cli('frobnicate');
    expect(usage.status).toBe(2);
    expect(usage.stderr).toContain('Usage: npm run admin');
  });
});

describe('npm run admin -- webhooks', { timeout: CLI_TEST_LIMIT_MS }, () => {
  it('adds (printing the secret once), lists, disables, enables and deletes webhook endpoints', async () => {
    const key = await h.createKey({ email: 'cli-hooks@example.test' });
    const added = cli('webhooks', 'add', key.key, 'https://hooks.example.com/in');
    expect(added.status).toBe(0);
    expect(added.stdout).toMatch(/secret \(shown once\): whsec_/);
    const id = /^([0-9a-f-]{36})/.exec(added.stdout)![1]!;
    const listed = cli('webhooks', 'list', key.key);
    expect(listed.stdout).toContain('https://hooks.example.com/in');
    expect(listed.stdout).not.toContain('whsec_');
    expect(cli('webhooks', 'disable', key.key, id).status).toBe(0);
    expect((await h.sql('select enabled from webhook_endpoints where id = $1', [id]))[0]).toEqual({ enabled: false });
    expect(cli('webhooks', 'enable', key.key, id).status).toBe(0);
    expect((await h.sql('select enabled from webhook_endpoints where id = $1', [id]))[0]).toEqual({ enabled: true });
    const bad = cli('webhooks', 'add', key.key, 'gopher://x');
    expect(bad.status).toBe(1);
    expect(bad.stderr).toContain('only http:// and https://');
    const loopback = cli('webhooks', 'add', key.key, 'http://127.0.0.1:3100/');
    expect(loopback.status).toBe(1);
    expect(loopback.stderr).toContain('refused: 127.0.0.1 is a loopback address; add it to WEBHOOK_ALLOW to allow it');
    expect(cli('webhooks', 'delete', key.key, id).status).toBe(0);
    expect(cli('webhooks', 'list', key.key).stdout).toContain('No webhooks.');
  });
});

describe('npm run admin -- deliveries flush', { timeout: CLI_TEST_LIMIT_MS }, () => {
  it('tries now an email waiting on its retry timer, and refuses a bad pace', async () => {
    const key = await h.createKey();
    const id = (await submitJson(h, { access_key: key.key, email: 'visitor@example.org', message: 'on a timer' })).json.submission_id as string;
    // As a worker leaves a temporary failure: `retrying`, its job on an hour's timer (this file runs no worker).
    const redis = new Redis(h.env.REDIS_URL!, { maxRetriesPerRequest: 1 });
    const queue = createDeliveryQueue<DeliveryJob>(redis, h.config);
    try {
      await (await queue.getJob(id))?.remove();
      const job = submissionJob(id);
      await queue.add(job.name, job.data, { jobId: id, delay: 3_600_000 });
      await updateSubmission(h, id, { status: 'retrying', nextAttemptAt: fromNow({ hours: 1 }) });

      const flushed = cli('deliveries', 'flush', '--per-second', '5');
      expect(flushed.stderr).toBe('');
      expect(flushed.status).toBe(0);
      expect(flushed.stdout).toMatch(/^promoted 1 now, 0 brought forward \(5 a second, the last at \d{4}-.*\), 0 due sooner anyway\n$/);
      expect(await (await queue.getJob(id))!.getState()).toBe('waiting');
      const [row] = await h.sql<{ late: boolean }>(`select next_attempt_at > now() as late from submissions where id = $1`, [id]);
      expect(row!.late).toBe(false);

      for (const pace of [['--per-second', '0'], ['--per-second'], ['--fast']]) {
        const refused = cli('deliveries', 'flush', ...pace);
        expect(refused.status, pace.join(' ')).toBe(2);
      }
    } finally {
      await queue.close();
      redis.disconnect();
    }
  });
});

// API processes cache active keys (src/api/submissions/key-cache.ts). A key that is disabled, or
// restricted, must stop being accepted on every API process: here the harness's API and a second
// one started as its own OS process (`node src/api/main.ts`), with a cache lifetime of 10 minutes,
// so only the change notifications can make them notice.
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildRecipient, buildWebhookEndpoint, updateKey } from '../support/factories.ts';
import { eventually, postJson, startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { queuedEndpointsOf } from '../support/queued-webhooks.ts';

const TOKEN = 'test-admin-token-0123456789';
const TEN_MINUTES = '600000';
let h: Harness;
let other: { child: ChildProcess; url: string };

async function startSecondApi(env: Record<string, string>): Promise<{ child: ChildProcess; url: string }> {
  const child = spawn(process.execPath, [path.resolve('src/api/main.ts')], {
    env: { ...process.env, ...env, LOG_LEVEL: 'info' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /"port":(\d+).*"msg":"api listening"|"msg":"api listening".*"port":(\d+)/.exec(output);
      if (match) resolve(match[1] ?? match[2]!);
    });
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => reject(new Error(`second API exited (${code}):\n${output}`)));
  });
  const url = `http://127.0.0.1:${port}`;
  await eventually(
    async () =>
      (await fetch(`${url}/readyz`).then(
        (r) => r.ok,
        () => false,
      ))
        ? true
        : undefined,
    20_000,
    'second API ready',
  );
  return { child, url };
}

beforeAll(async () => {
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN, KEY_CACHE_TTL_MS: TEN_MINUTES, UNCONFIRMED_EMAILS_PER_HOUR: '2' }, worker: false });
  other = await startSecondApi(h.env);
});
afterAll(async () => {
  if (other?.child.exitCode === null) {
    const exited = new Promise((resolve) => other.child.once('exit', resolve));
    other.child.kill('SIGTERM');
    await exited;
  }
  await h?.stop();
});

const submit = (url: string, key: string) =>
  postJson(`${url}/api/contact-api/`, { access_key: key, email: 'sender@example.org', message: 'hello' }, { origin: 'https://example.com' });
const statusAt = async (url: string, key: string) => (await submit(url, key)).status;
/** Both processes have the key cached: each accepted a submission with it. */
async function acceptedByBoth(key: TestKey): Promise<void> {
  expect(await statusAt(h.url, key.key)).toBe(200);
  expect(await statusAt(other.url, key.key)).toBe(200);
}
const refusedAt = (url: string, key: string, status: number) =>
  eventually(async () => ((await statusAt(url, key)) === status ? true : undefined), 20_000, `${status} from ${url}`);

describe('cached keys', () => {
  it('a key disabled through one API process is refused by the other, and accepted again when enabled', async () => {
    const key = await h.createKey();
    await acceptedByBoth(key);
    const patched = await fetch(`${h.url}/admin/keys/${key.key}`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ status: 'disabled' }),
    });
    expect(patched.status).toBe(200);
    await refusedAt(other.url, key.key, 403);
    await refusedAt(h.url, key.key, 403);

    await updateKey(h, key, { status: 'active' });
    expect(await statusAt(other.url, key.key)).toBe(200);
  });

  it('a change made straight in PostgreSQL (domains, then deletion) reaches both processes', async () => {
    const key = await h.createKey();
    await acceptedByBoth(key);
    await updateKey(h, key, { useDomain: true, domains: ['example.org'] });
    await refusedAt(other.url, key.key, 400);
    await refusedAt(h.url, key.key, 400);

    await updateKey(h, key, { useDomain: false, status: 'deleted' });
    await refusedAt(other.url, key.key, 403);
    await refusedAt(h.url, key.key, 403);
  });

  it('a mailbox that confirms is treated as confirmed by both processes', async () => {
    const key = await h.createKey();
    await acceptedByBoth(key);
    // The two submissions spent the mailbox's allowance (2 per hour here): the next is held.
    expect((await submit(other.url, key.key)).json.email_status).toBe('held');
    await buildRecipient(h, { mailbox: key.mailbox });
    for (const url of [other.url, h.url]) {
      await eventually(async () => ((await submit(url, key.key)).json.email_status === 'queued' ? true : undefined), 20_000, `queued from ${url}`);
    }
  });

  it('a webhook endpoint added straight in PostgreSQL gets the next submission on both processes', async () => {
    const key = await h.createKey();
    await buildRecipient(h, { mailbox: key.mailbox });
    await acceptedByBoth(key);
    const endpoint = await buildWebhookEndpoint(h, { key, url: 'https://hooks.example.org/in' });
    for (const url of [other.url, h.url]) {
      await eventually(
        async () => {
          const response = await submit(url, key.key);
          expect(response.status).toBe(200);
          const id = response.json.submission_id as string;
          // No worker runs here: the delivery is the job the API queued for it.
          return (await queuedEndpointsOf(h, h.api.deps.webhookQueue, id)).includes(endpoint.id) ? true : undefined;
        },
        20_000,
        `a webhook delivery from ${url}`,
      );
    }
  });

  it('while the change notifications are cut off, keys are read from PostgreSQL', async () => {
    const key = await h.createKey();
    await acceptedByBoth(key);
    await h.sql(`select pg_terminate_backend(pid) from pg_stat_activity where datname = current_database() and query ilike 'listen %'`);
    await updateKey(h, key, { status: 'disabled' });
    await refusedAt(other.url, key.key, 403);
    await refusedAt(h.url, key.key, 403);
  });
});

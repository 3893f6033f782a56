// The virus scan in the webhooks (docs/file-scanning.md), with a real clamd (test/support/clamd.ts):
// a `submission.created` event carries each file's outcome; an infected file is withheld (no link),
// its signature named, and a chat channel's message marks it; a clean one keeps its link.
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Webhook } from 'standardwebhooks';
import { adminRequest } from '../support/client.ts';
import { eventually, startHarness, type Harness, type TestKey } from '../support/harness.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';
import { startChatStandIn, type ChatStandIn } from '../support/chat-stand-ins.ts';
import { EICAR, EICAR_SIGNATURE, startTestClamd, type TestClamd } from '../support/clamd.ts';

const TOKEN = 'file-scans-test-admin-token-0123456789';
const HOST = '127.0.0.2';
let h: Harness;
let clamd: TestClamd;
let receiver: Receiver;
let slack: ChatStandIn;

beforeAll(async () => {
  clamd = await startTestClamd();
  receiver = await startReceiver(HOST);
  slack = await startChatStandIn('slack', HOST);
  h = await startHarness({
    env: { ...clamd.env, CLAMD_TIMEOUT_MS: '20000', SCAN_WAIT_MS: '120000', ADMIN_TOKEN: TOKEN, WEBHOOK_ALLOW: HOST, WEBHOOK_RETRY_BACKOFF_MS: '100' },
  });
  slack.publicUrl = h.config.PUBLIC_URL;
}, 120_000);
afterAll(async () => {
  await h?.stop();
  await receiver?.close();
  await slack?.close();
  await clamd?.close();
});

const admin = (method: string, path: string, body?: unknown) => adminRequest(h, TOKEN, method, path, body);
const sha256 = (data: Buffer | Uint8Array) => createHash('sha256').update(data).digest('hex');

async function submitFiles(key: TestKey, files: Array<{ name: string; data: Buffer }>): Promise<string> {
  const form = new FormData();
  form.append('access_key', key.key);
  form.append('email', 'sender@example.test');
  form.append('message', 'files over a webhook');
  // Only the webhooks: the owner's email, which would scan first, is not asked for.
  form.append('not_email_sent', 'true');
  for (const file of files) form.append('attachment', new Blob([file.data], { type: 'application/octet-stream' }), file.name);
  const response = await fetch(`${h.url}/api/contact-api/`, { method: 'POST', body: form, headers: { accept: 'application/json' } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { submission_id: string }).submission_id;
}

describe('scanned files in webhooks', () => {
  it('withholds an infected file from the event (no link, its signature named) and a chat message, and keeps the clean one', async () => {
    const key = await h.createKey();
    const hook = await admin('POST', `/admin/keys/${key.key}/webhooks`, { url: receiver.url });
    expect(hook.status).toBe(201);
    expect((await admin('POST', `/admin/keys/${key.key}/webhooks`, { kind: 'slack', url: slack.url })).status).toBe(201);
    const clean = Buffer.from('clean bytes\n');
    const id = await submitFiles(key, [
      { name: 'eicar.com', data: Buffer.from(EICAR) },
      { name: 'clean.txt', data: clean },
    ]);

    const call = await eventually(async () => receiver.received.find((received) => JSON.parse(received.body).data?.id === id), 30_000, 'the webhook');
    const payload = new Webhook(hook.json.secret).verify(call.body, {
      'webhook-id': String(call.headers['webhook-id']),
      'webhook-timestamp': String(call.headers['webhook-timestamp']),
      'webhook-signature': String(call.headers['webhook-signature']),
    }) as { data: { files: Array<{ name: string; url: string | null; url_expires_at: string | null; scan: unknown }> } };
    const [infected, kept] = payload.data.files;
    expect(infected).toMatchObject({ name: 'eicar.com', url: null, url_expires_at: null, scan: { outcome: 'infected', detail: EICAR_SIGNATURE } });
    expect(kept).toMatchObject({ name: 'clean.txt', scan: { outcome: 'clean', detail: null } });
    expect(sha256(Buffer.from(await (await fetch(kept!.url!)).arrayBuffer()))).toBe(sha256(clean));
    expect(call.body).not.toContain('eicar.com?');

    const post = await eventually(async () => slack.calls.find((posted) => JSON.stringify(posted.body).includes(id)), 30_000, 'the chat message');
    const shown = JSON.stringify(post.body);
    expect(shown).toContain(`withheld: infected, ${EICAR_SIGNATURE}`);
    expect(shown).not.toMatch(/https?:[^"]*eicar/);
    // Scanned once: one outcome per file, whichever delivery came first.
    expect(await h.sql('select filename, scan_outcome from attachments where submission_id = $1 order by filename', [id])).toEqual([
      { filename: 'clean.txt', scan_outcome: 'clean' },
      { filename: 'eicar.com', scan_outcome: 'infected' },
    ]);
  });
});

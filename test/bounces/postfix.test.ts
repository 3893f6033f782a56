// Bounces through a real relay: the workers send through an isolated Postfix, which accepts mail
// for unknown users of its local domain with 250 and bounces them a moment later as a DSN to the
// email's return path, routed to the bounce receiver. The row ends `bounced`, and the owner's
// console and webhook say so.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../../src/local/services.ts';
import { buildOwnerSession, buildWebhookEndpoint } from '../support/factories.ts';
import { eventually, postJson, startHarness, type Harness } from '../support/harness.ts';
import { request } from '../support/http.ts';
import { startPostfix, type PostfixInstance } from '../support/postfix.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

const BOUNCE_DOMAIN = 'bounces.test';
const LOCAL_DOMAIN = 'local.test';
let postfix: PostfixInstance;
let h: Harness;
let hooks: Receiver;

beforeAll(async () => {
  const bouncePort = await freePort();
  postfix = await startPostfix({ localDomain: LOCAL_DOMAIN, routes: { [BOUNCE_DOMAIN]: bouncePort } });
  h = await startHarness({ env: { SMTP_URL: postfix.url, BOUNCE_DOMAIN, WEBHOOK_ALLOW: '127.0.0.8', SUPPRESS_AFTER_HARD_BOUNCES: '2' } });
  await h.startBounces(bouncePort);
  hooks = await startReceiver('127.0.0.8');
});
afterAll(async () => {
  await hooks?.close();
  await h?.stop();
  await postfix?.stop();
});

/**
 * A console session for `email`, made in the database: the sign-in email to an unknown user would
 * bounce like everything else sent there.
 */
async function consoleSession(email: string): Promise<(path: string) => Promise<unknown>> {
  const { token } = await buildOwnerSession(h, { email });
  return async (path) => (await request(`${h.url}${path}`, { headers: { cookie: `owner_session=${token}`, accept: 'application/json' } })).json;
}

const statusOf = async (id: string) =>
  (
    await h.sql<{ email_status: string; bounce_status: string | null; bounce_diagnostic: string | null }>(
      'select email_status, bounce_status, bounce_diagnostic from submissions where id = $1',
      [id],
    )
  )[0]!;

describe('bounces through a real Postfix relay', () => {
  it('ends a submission to an unknown user `bounced` with the relay’s diagnostic, in the console and on the webhook', async () => {
    const user = `nobody-${randomBytes(4).toString('hex')}`;
    const key = await h.createKey({ email: `${user}@${LOCAL_DOMAIN}` });
    await buildWebhookEndpoint(h, { key, url: hooks.url });
    const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'visitor@example.org', message: 'to a typo' });
    expect(submitted.status).toBe(200);
    const id = submitted.json.submission_id as string;

    // Postfix took it (250), then its DSN came back to the return path within seconds.
    const bounced = await eventually(
      async () => {
        const row = await statusOf(id);
        return row.email_status === 'bounced' ? row : undefined;
      },
      30_000,
      `the bounce (Postfix log:\n${postfix.log()})`,
    );
    expect(bounced.bounce_status).toBe('5.1.1');
    expect(bounced.bounce_diagnostic).toMatch(/unknown user/i);
    expect(bounced.bounce_diagnostic).toContain(user);

    const api = await consoleSession(key.email);
    expect(await api(`/owner/api/submissions/${id}`)).toMatchObject({
      email_status: 'bounced',
      bounce: { type: 'hard', status: '5.1.1', diagnostic: expect.stringMatching(/unknown user/i) },
    });
    const event = await eventually(
      async () => hooks.received.map((r) => JSON.parse(r.body)).find((body) => body.type === 'submission.bounced' && body.data.id === id),
      30_000,
      'the submission.bounced webhook',
    );
    expect(event.data.bounce).toMatchObject({ type: 'hard', status: '5.1.1' });
  });

  it('suppresses the mailbox after repeated hard bounces: the next submission is not handed to the relay', async () => {
    const key = await h.createKey({ email: `gone-${randomBytes(4).toString('hex')}@${LOCAL_DOMAIN}` });
    for (let i = 0; i < 2; i++) {
      const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'visitor@example.org', message: `try ${i}` });
      const id = submitted.json.submission_id as string;
      await eventually(async () => ((await statusOf(id)).email_status === 'bounced' ? true : undefined), 30_000, `bounce ${i}`);
    }
    const submitted = await postJson(`${h.url}/api/contact-api/`, { access_key: key.key, email: 'visitor@example.org', message: 'suppressed' });
    const id = submitted.json.submission_id as string;
    await eventually(async () => ((await statusOf(id)).email_status === 'suppressed' ? true : undefined), 20_000, '`suppressed`');
    expect(postfix.log()).not.toContain(id.replace(/-/g, ''));
  });
});

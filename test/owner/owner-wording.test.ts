// What the owner console says where it used to say something else: the Webhooks and chat page is headed by
// the key's name, "Not spam" on an email already sent promises nothing on its way, and a message
// re-sent counts and numbers its attempts across every send, as its delivery history lists them.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { submitJson } from '../support/client.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { signIn } from '../support/owner.ts';

let h: Harness;

beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

async function settledMessage(key: { key: string }, message: string, status = 'sent'): Promise<string> {
  const response = await submitJson(h, { access_key: key.key, email: 'visitor@example.org', message });
  expect(response.status).toBe(200);
  const id = response.json.submission_id as string;
  await eventually(async () => ((await h.sql('select email_status from submissions where id = $1', [id]))[0]?.email_status === status ? true : undefined));
  return id;
}

it("heads the Webhooks and chat page with the key's name, not its value", async () => {
  const key = await h.createKey({ email: 'named@example.test' });
  await h.sql('update verification_keys set label = $1 where id = $2', ['Shop contact form', key.id]);
  const owner = await signIn(h, key.email);
  const page = await owner.get(`/owner/keys/${key.id}/webhooks`);
  expect(page.text).toContain('<h1>Webhooks and chat of Shop contact form</h1>');
  expect(page.text).not.toContain(key.key);
});

it('"Not spam" on an email already sent says nothing is on its way', async () => {
  const key = await h.createKey({ email: 'marks@example.test' });
  const id = await settledMessage(key, 'An ordinary question, already in the inbox');
  const owner = await signIn(h, key.email);
  const marked = await owner.post(`/owner/submissions/${id}/spam-mark`, { mark: 'ham', view: 'submission' });
  expect(marked.status).toBe(303);
  const page = await owner.get(marked.headers.location!);
  expect(page.text).toContain('Marked not spam');
  expect(page.text).not.toContain('on its way');
});

it('after a re-send, the attempts shown and the history agree, numbered across both sends', async () => {
  const key = await h.createKey({ email: 'resend@example.test' });
  h.sink.behave(() => ({ code: 550, message: 'mailbox unavailable' }));
  const id = await settledMessage(key, 'Refused, then sent again', 'failed');
  h.sink.behave(undefined);
  const owner = await signIn(h, key.email);
  expect((await owner.post(`/owner/submissions/${id}/resend`)).status).toBe(303);
  const page = await eventually(async () => {
    const shown = await owner.get(`/owner/submissions/${id}`);
    return shown.text.includes('Delivery history: <span data-field="history-count">2 attempts') ? shown.text : undefined;
  });
  expect(page).toMatch(/data-field="attempts">2</);
  const numbers = [...page.matchAll(/· attempt (\d+) ·/g)].map((match) => match[1]);
  expect(numbers).toEqual(['2', '1']);
});

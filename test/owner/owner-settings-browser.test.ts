// A key's settings page in Chromium, as an owner sets a key up: reached from the key list and from
// the key's messages, in sections; a refused save comes back with everything typed and names the
// field; adding a recipient keeps what was typed above it. A test message goes through the whole
// pipeline (the owner's email, a copy, a chat channel, a webhook), marked as a test everywhere and
// counted nowhere, at most 10 a key an hour. The previews follow what is typed, unsaved. axe-core
// finds nothing on the pages, and nothing scrolls sideways at 360 px. The list of messages shows at least 10 rows in 1280x900.
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { submitJson } from '../support/client.ts';
import { linkIn, signIn as signInHttp, signInMailsTo } from '../support/owner.ts';
import { buildKeyRecipient } from '../support/factories.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';
import { startChatStandIn, type ChatStandIn } from '../support/chat-stand-ins.ts';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const WCAG = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];
const AXE_RUN = `axe.run(document, { runOnly: { type: 'tag', values: ${JSON.stringify(WCAG)} } })
  .then((result) => result.violations.map((v) => v.id + ' (' + v.help + ') at ' + v.nodes.map((n) => n.target.join(' ')).join(', ')))`;
const OVERFLOW = 'document.documentElement.scrollWidth - document.documentElement.clientWidth';

let h: Harness;
let browser: Browser;
const contexts: BrowserContext[] = [];
const HOOK_HOST = '127.0.0.9';
let receiver: Receiver;
let slack: ChatStandIn;

beforeAll(async () => {
  receiver = await startReceiver(HOOK_HOST);
  slack = await startChatStandIn('slack', HOOK_HOST);
  h = await startHarness({ env: { WEBHOOK_ALLOW: HOOK_HOST } });
  slack.publicUrl = h.config.PUBLIC_URL;
  browser = await launchChromium();
});
afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
  await h?.stop();
  await receiver?.close();
  await slack?.close();
});

async function openPage(viewport = { width: 1280, height: 900 }): Promise<Page> {
  // The checker is injected as a script of its own: the pages' CSP would refuse it.
  const context = await browser.newContext({ bypassCSP: true, viewport });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  return page;
}

async function signIn(page: Page, email: string): Promise<void> {
  // The address may have signed in before (through HTTP): the link is the newest email's.
  const before = signInMailsTo(h, email).length;
  await page.goto(`${h.url}/owner`);
  await page.getByLabel('The address that holds your keys').fill(email);
  await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
  const mail = await eventually(async () => signInMailsTo(h, email)[before], 20_000, 'sign-in email');
  await page.goto(linkIn(h, mail).toString());
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${h.url}/owner/keys`);
}

/** axe-core's findings on the page as it is, and how far it scrolls sideways at 360 px. */
async function checked(page: Page): Promise<{ violations: string[]; overflow: number }> {
  await page.addScriptTag({ path: AXE });
  const wide = await page.evaluate<string[]>(AXE_RUN);
  const size = page.viewportSize()!;
  await page.setViewportSize({ width: 360, height: 740 });
  const narrow = await page.evaluate<string[]>(AXE_RUN);
  const overflow = await page.evaluate<number>(OVERFLOW);
  await page.setViewportSize(size);
  return { violations: [...wide, ...narrow], overflow };
}

/** With BROWSER_SCREENSHOT_DIR set, keeps a picture of the page (the owner guide's pictures). */
const screenshot = async (page: Page, name: string) => {
  const dir = process.env.BROWSER_SCREENSHOT_DIR;
  if (dir) await page.screenshot({ path: path.join(dir, name), fullPage: true });
};

describe("a key's settings page", () => {
  it('is reached from the key list and the messages, sets the key up in sections, and passes axe at 1280 and 360 px', async () => {
    const owner = await h.createKey();
    const page = await openPage();
    await signIn(page, owner.email);

    await page.getByRole('link', { name: 'Settings' }).click();
    await page.waitForURL(`${h.url}/owner/keys/${owner.id}/settings`);
    for (const name of ['Email', 'Autoresponse', 'Spam', 'Captcha and sites', 'More recipients', 'Chat and webhooks']) {
      expect(await page.getByRole('region', { name, exact: true }).count(), name).toBe(1);
    }
    // The name is seen by visitors too, in the autoresponse: the page says so where it is typed.
    expect(await page.getByLabel(/^Name/).getAttribute('aria-describedby')).toBe('label-rules');
    expect(await page.locator('#label-rules').textContent()).toContain('and to your visitors: the autoresponse says');
    // Nothing of the settings is left on the key list.
    await page.goto(`${h.url}/owner/keys`);
    expect(await page.getByRole('button', { name: 'Save settings' }).count()).toBe(0);
    await page.goto(`${h.url}/owner/keys/${owner.id}/submissions`);
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.waitForURL(`${h.url}/owner/keys/${owner.id}/settings`);

    await page.getByLabel(/^Name/).fill('Contact page, shop.example');
    await page.getByLabel('Send an autoresponse to each visitor').check();
    await page.getByLabel('Subject (one line').fill('We have your message');
    await page.getByLabel('Text (plain text').fill('Thank you: we answer within a day.');
    await page.getByLabel(/^Spam filter/).selectOption('strict');
    await page.getByLabel('Captcha', { exact: true }).selectOption('altcha');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.waitForURL(`${h.url}/owner/keys/${owner.id}/settings?notice=saved`);
    await expect.poll(() => page.getByRole('status').first().textContent()).toBe('Key settings saved.');
    expect(await h.sql('select label, autoresponse_enabled, spam_filter, captcha from verification_keys where id = $1', [owner.id])).toEqual([
      { label: 'Contact page, shop.example', autoresponse_enabled: true, spam_filter: 'strict', captcha: 'altcha' },
    ]);
    await screenshot(page, 'console-settings.png');
    expect(await checked(page)).toEqual({ violations: [], overflow: 0 });
  }, 120_000);

  it('answers a refused save with every typed value kept, the field named and marked, and nothing stored', async () => {
    const owner = await h.createKey();
    const page = await openPage();
    await signIn(page, owner.email);
    await page.goto(`${h.url}/owner/keys/${owner.id}/settings`);

    await page.getByLabel(/^Name/).fill('Shop contact form');
    await page.getByLabel('Put the name before the subject').check();
    await page.getByLabel('Fields shown first').fill('topic\norder_number');
    await page.getByLabel('Send an autoresponse to each visitor').check();
    await page.getByLabel('Subject (one line').fill('We have your message');
    await page.getByLabel(/^Spam filter/).selectOption('off');
    await page.getByLabel('Send held spam to the webhooks too').check();
    await page.getByLabel('Captcha', { exact: true }).selectOption('turnstile');
    await page.getByLabel('Accept submissions only from these sites').fill('shop.example');
    const [answer] = await Promise.all([
      // The form's own answer, not the previews' (the page's script posts to …/preview).
      page.waitForResponse((response) => response.request().method() === 'POST' && response.url() === `${h.url}/owner/keys/${owner.id}`),
      page.getByRole('button', { name: 'Save settings' }).click(),
    ]);
    expect(answer.status()).toBe(400);
    await page.waitForLoadState();

    // Every value as typed, the ticks included.
    expect(await page.getByLabel(/^Name/).inputValue()).toBe('Shop contact form');
    expect(await page.getByLabel('Put the name before the subject').isChecked()).toBe(true);
    expect(await page.getByLabel('Fields shown first').inputValue()).toBe('topic\norder_number');
    expect(await page.getByLabel('Send an autoresponse to each visitor').isChecked()).toBe(true);
    expect(await page.getByLabel('Subject (one line').inputValue()).toBe('We have your message');
    expect(await page.getByLabel(/^Spam filter/).inputValue()).toBe('off');
    expect(await page.getByLabel('Send held spam to the webhooks too').isChecked()).toBe(true);
    expect(await page.getByLabel('Captcha', { exact: true }).inputValue()).toBe('turnstile');
    expect(await page.getByLabel('Accept submissions only from these sites').inputValue()).toBe('shop.example');
    // The field in error: marked, its reason next to it and read with it.
    const text = page.getByLabel('Text (plain text');
    expect(await text.getAttribute('aria-invalid')).toBe('true');
    const reason = page.locator(`#${(await text.getAttribute('aria-describedby'))!.split(' ')[0]}`);
    expect(await reason.textContent()).toBe('An autoresponse needs a subject and a text before it is turned on.');
    expect(await page.locator('[aria-invalid=true]').count()).toBe(1);
    // Nothing of it was stored.
    expect(await h.sql('select label, autoresponse_enabled, spam_filter, captcha from verification_keys where id = $1', [owner.id])).toEqual([
      { label: null, autoresponse_enabled: false, spam_filter: 'normal', captcha: null },
    ]);
    expect(await checked(page)).toEqual({ violations: [], overflow: 0 });

    // Written in, the same form saves.
    await text.fill('Thank you.');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.waitForURL(`${h.url}/owner/keys/${owner.id}/settings?notice=saved`);
    expect(await h.sql('select label, autoresponse_enabled, spam_filter, captcha from verification_keys where id = $1', [owner.id])).toEqual([
      { label: 'Shop contact form', autoresponse_enabled: true, spam_filter: 'off', captcha: 'turnstile' },
    ]);
  }, 120_000);

  it('adds a recipient without losing the settings typed above it, and names the address field when it refuses one', async () => {
    const owner = await h.createKey();
    const page = await openPage();
    await signIn(page, owner.email);
    await page.goto(`${h.url}/owner/keys/${owner.id}/settings`);

    await page.getByLabel(/^Name/).fill('Typed, not saved');
    await page.getByLabel('Subject (one line').fill('Typed subject');
    await page.getByLabel('Add an address').fill('colleague@team.example');
    await page.getByRole('button', { name: 'Add and ask it to confirm' }).click();
    await expect.poll(() => page.getByText('Address added: it receives copies once it confirms', { exact: false }).count()).toBe(1);
    expect(await page.getByRole('region', { name: 'More recipients' }).getByText('colleague@team.example').count()).toBe(1);
    expect(await page.getByLabel(/^Name/).inputValue()).toBe('Typed, not saved');
    expect(await page.getByLabel('Subject (one line').inputValue()).toBe('Typed subject');
    expect(await page.getByLabel('Add an address').inputValue()).toBe('');

    await page.getByLabel('Add an address').fill(owner.email);
    await page.getByRole('button', { name: 'Add and ask it to confirm' }).click();
    await expect.poll(() => page.getByLabel('Add an address').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#error-email').textContent()).toBe(`${owner.email} is the key's own address: it receives every message already.`);
    expect(await page.getByLabel('Add an address').inputValue()).toBe(owner.email);
    expect(await page.getByLabel(/^Name/).inputValue()).toBe('Typed, not saved');
    // Only Save stores them.
    expect(await h.sql('select label from verification_keys where id = $1', [owner.id])).toEqual([{ label: null }]);
  }, 120_000);
});

describe("the settings page's previews", () => {
  it('follow what is typed, unsaved, with the reason for what a save would refuse; axe finds nothing and nothing scrolls sideways at 360 px', async () => {
    const owner = await h.createKey();
    const page = await openPage();
    await signIn(page, owner.email);
    await page.goto(`${h.url}/owner/keys/${owner.id}/settings`);
    // The name is typed for the visitors as much as for the owner: its label says so.
    expect(await page.getByLabel('Name, seen by your visitors too').count()).toBe(1);

    await page.getByLabel('Subject pattern').fill('New lead from {name|a visitor}: {subject} [{field:plan}]');
    const email = page.getByRole('region', { name: 'Preview with a sample message, as typed' });
    await expect
      .poll(() => email.getByText('Subject: New lead from Ada Lovelace: Question about an order', { exact: true }).count(), { timeout: 15_000 })
      .toBe(1);
    await page.getByLabel('Fields shown first').fill('plan');
    await expect.poll(() => email.getByText('Subject: New lead from Ada Lovelace: Question about an order [(plan)]').count(), { timeout: 15_000 }).toBe(1);
    await page.getByLabel('Subject pattern').fill('{subject} {phone}');
    await expect.poll(() => email.getByText('Unknown placeholder: {phone}.', { exact: false }).count(), { timeout: 15_000 }).toBe(1);

    await page.getByLabel(/^Name/).fill('Shop contact');
    await page.getByLabel('Subject (one line').fill('We have your message');
    await page.getByLabel('Text (plain text').fill('Thank you.\n\nOur hours: https://shop.example/hours <b>soon</b>');
    const autoresponse = page.getByRole('region', { name: 'Preview, as typed' });
    await expect.poll(() => autoresponse.getByText('Subject: We have your message').count(), { timeout: 15_000 }).toBe(1);
    expect(await autoresponse.getByRole('link', { name: 'https://shop.example/hours' }).getAttribute('href')).toBe('https://shop.example/hours');
    expect(await autoresponse.getByText('<b>soon</b>', { exact: false }).count()).toBe(1);
    expect(await autoresponse.locator('b').count()).toBe(0);
    expect(await autoresponse.textContent()).toContain('"Shop contact"');

    // Nothing of it is stored: only Save does that.
    expect(await h.sql('select label, email_subject, autoresponse_subject from verification_keys where id = $1', [owner.id])).toEqual([
      { label: null, email_subject: null, autoresponse_subject: null },
    ]);
    expect(await checked(page)).toEqual({ violations: [], overflow: 0 });
  }, 120_000);
});

describe('a test message', () => {
  it('goes to the owner, a copy, a chat channel and a webhook, marked as a test, counted nowhere; the page keeps what was typed and links to its outcome', async () => {
    const owner = await h.createKey();
    const colleague = `colleague-${owner.id.slice(0, 8)}@example.test`;
    await buildKeyRecipient(h, { key: owner, email: colleague, confirmed: true });
    // An autoresponse is on and the spam filter normal: a test message gets neither.
    await h.sql(
      `update verification_keys set autoresponse_enabled = true, autoresponse_subject = 'Thanks', autoresponse_text = 'We read every message.' where id = $1`,
      [owner.id],
    );
    const http = await signInHttp(h, owner.email);
    expect((await http.post(`/owner/keys/${owner.id}/webhooks`, { url: `${receiver.url}/hook-${owner.id}` })).status).toBe(200);
    expect((await http.post(`/owner/keys/${owner.id}/webhooks`, { kind: 'slack', url: slack.url })).status).toBe(200);

    const page = await openPage();
    await signIn(page, owner.email);
    await page.goto(`${h.url}/owner/keys/${owner.id}/settings`);
    await page.getByLabel(/^Name/).fill('Typed, not saved');
    await page.getByRole('button', { name: 'Send a test message' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Test message sent');
    expect(await page.getByLabel(/^Name/).inputValue()).toBe('Typed, not saved');
    expect(await checked(page)).toEqual({ violations: [], overflow: 0 });

    // Its outcome, on its page: marked as a test, its email sent.
    await page.getByRole('link', { name: 'Follow the test message on its page' }).click();
    await page.waitForURL(/\/owner\/submissions\//);
    const id = page.url().split('/').pop()!;
    await eventually(
      async () => {
        await page.reload();
        return (await page.locator('[data-field="status"]').first().textContent()) === 'sent' ? true : undefined;
      },
      30_000,
      'the test message sent',
    );
    expect(await page.locator('.badge-test').textContent()).toBe('test');
    expect(await page.getByRole('button', { name: 'Spam', exact: true }).count()).toBe(0);
    await screenshot(page, 'console-test-message.png');
    expect(await checked(page)).toEqual({ violations: [], overflow: 0 });

    // At the SMTP sink: the owner's email and the copy, each subject marked.
    const mailTo = (address: string) => h.sink.messages.find((mail) => mail.envelope.to.includes(address) && mail.parsed.text?.includes(id));
    const ownerMail = await eventually(async () => mailTo(owner.email), 30_000, "the owner's email");
    expect(ownerMail.parsed.subject).toBe('[Test] Test message from your contact form');
    const copy = await eventually(async () => mailTo(colleague), 30_000, 'the copy');
    expect(copy.parsed.subject).toBe('[Test] Test message from your contact form');
    // The webhook says `test: true`; the chat post says it is a test message.
    const hook = await eventually(async () => receiver.received.find((request) => request.path.endsWith(`/hook-${owner.id}`)), 30_000, 'the webhook');
    expect(JSON.parse(hook.body)).toMatchObject({ type: 'submission.created', data: { id, test: true } });
    const post = await eventually(async () => slack.calls.find((call) => JSON.stringify(call.body).includes(id)), 30_000, 'the chat post');
    expect(JSON.stringify(post.body)).toContain('Test message');

    // Counted nowhere: no spam check, no autoresponse, not in the overview, not markable.
    expect(await h.sql('select spam_verdict, autoresponse, test from submissions where id = $1', [id])).toEqual([
      { spam_verdict: null, autoresponse: 'off', test: true },
    ]);
    expect(await h.sql('select count(*)::int as n from autoresponses where submission_id = $1', [id])).toEqual([{ n: 0 }]);
    const overview = (await http.get(`/owner/keys/${owner.id}/overview`)).text;
    expect(overview).toContain('<dd data-total="all">0</dd>');
    expect(overview).toContain('<dd data-total="stored">0</dd>');
    expect((await http.post(`/owner/submissions/${id}/spam-mark`, { mark: 'spam', view: 'submission' })).status).toBe(400);
  }, 180_000);

  it('goes at most 10 times a key an hour; the 11th is refused and says when the next can go', async () => {
    const owner = await h.createKey();
    const http = await signInHttp(h, owner.email);
    for (let i = 0; i < 10; i++) {
      const sent = await http.post(`/owner/keys/${owner.id}/test-message`);
      expect(sent.status).toBe(303);
      expect(sent.headers.location).toMatch(/^\/owner\/submissions\/[0-9a-f-]{36}\?notice=test-sent$/);
    }
    const refused = await http.post(`/owner/keys/${owner.id}/test-message`);
    expect(refused.status).toBe(429);
    expect(refused.text).toContain('A key sends at most 10 test messages an hour: the next can go in 60 minutes.');
    expect(await h.sql('select count(*)::int as n from submissions where key_id = $1', [owner.id])).toEqual([{ n: 10 }]);
  }, 120_000);
});

describe('the list of messages', () => {
  it('shows at least 10 messages in the first 900 px at 1280 px wide', async () => {
    const owner = await h.createKey();
    for (let i = 0; i < 14; i++) {
      // No subject: the list shows the message's first 90 characters, as for most forms.
      const message = `Message number ${i}: a question about an order that is long enough to wrap onto a second line of the list if nothing stops it.`;
      expect((await submitJson(h, { access_key: owner.key, email: `visitor.number.${i}@example.org`, message })).status).toBe(200);
    }
    const page = await openPage();
    await signIn(page, owner.email);
    await page.goto(`${h.url}/owner/keys/${owner.id}/submissions`);
    const visible = await page.evaluate<number>(
      `Array.from(document.querySelectorAll('.inbox tbody tr')).filter((row) => row.getBoundingClientRect().bottom <= 900).length`,
    );
    expect(visible).toBeGreaterThanOrEqual(10);
  }, 120_000);
});

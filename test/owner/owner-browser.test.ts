// The owner console's journey in a real browser (Debian's chromium via playwright-core), with
// JavaScript turned off: the pages must work as plain HTML forms and links. Ask for the link, take
// it from the SMTP sink, sign in with the page's button, watch a message go from queued to sent,
// download its file, see a failed one with the SMTP reply and re-send it, delete one, sign out.
// Chat channels are added through their forms and a message reaches them.
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, serveHtml } from '../support/browser.ts';
import { eventually, listObjectKeys, startHarness, type Harness } from '../support/harness.ts';
import { keyStatusOf } from '../support/rows.ts';
import { submitJson } from '../support/client.ts';
import { linkIn, signInMailsTo } from '../support/owner.ts';
import { startChatStandIn, type ChatStandIn } from '../support/chat-stand-ins.ts';

let h: Harness;
let browser: Browser;
const contexts: BrowserContext[] = [];
const CHAT_HOST = '127.0.0.8';
let slack: ChatStandIn;
let telegram: ChatStandIn;

beforeAll(async () => {
  slack = await startChatStandIn('slack', CHAT_HOST);
  telegram = await startChatStandIn('telegram', CHAT_HOST);
  h = await startHarness({ env: { WEBHOOK_ALLOW: CHAT_HOST, TELEGRAM_API_URL: telegram.url } });
  slack.publicUrl = telegram.publicUrl = h.config.PUBLIC_URL;
  browser = await launchChromium();
});
afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
  await h?.stop();
  await slack?.close();
  await telegram?.close();
});

async function openPage(
  javaScriptEnabled = false,
  options: { locale?: string; timezoneId?: string } = {},
): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ javaScriptEnabled, acceptDownloads: true, ...options });
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  return { context, page, problems };
}

const FILE = Buffer.from(Array.from({ length: 50_000 }, (_, i) => (i * 13 + 5) % 256));

async function submitWithFile(key: string, message: string): Promise<string> {
  const body = new FormData();
  body.set('access_key', key);
  body.set('email', 'visitor@example.org');
  body.set('message', message);
  body.set('order_number', '12345');
  body.append('attachment', new Blob([FILE], { type: 'application/pdf' }), 'invoice.pdf');
  const response = await fetch(`${h.url}/api/contact-api/`, { method: 'POST', body, headers: { accept: 'application/json' } });
  expect(response.status).toBe(200);
  return ((await response.json()) as { submission_id: string }).submission_id;
}

/** With BROWSER_SCREENSHOT_DIR set, keeps a picture of the page (to look at the pages' look). */
const screenshot = async (page: Page, name: string) => {
  const dir = process.env.BROWSER_SCREENSHOT_DIR;
  if (dir) await page.screenshot({ path: path.join(dir, name), fullPage: true });
};

/** The journey's first steps in one: ask for the link, take it from the sink, press Sign in. */
async function signIn(page: Page, email: string): Promise<void> {
  await page.goto(`${h.url}/owner`);
  await page.getByLabel('The address that holds your keys').fill(email);
  await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
  const mail = await eventually(async () => signInMailsTo(h, email)[0], 20_000, 'sign-in email');
  await page.goto(linkIn(h, mail).toString());
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${h.url}/owner/keys`);
}

const card = (page: Page, id: string) => page.locator(`#s-${id}`);
const statusOf = (page: Page, id: string) => card(page, id).locator('[data-field="status"]').textContent();

/** Reloads until the message shows `status` (the page has no script: the owner reloads). */
async function reloadUntil(page: Page, id: string, status: string): Promise<void> {
  await eventually(
    async () => {
      await page.reload();
      return (await statusOf(page, id)) === status ? true : undefined;
    },
    20_000,
    `${id} ${status}`,
  );
}

describe('the owner console in a browser, without JavaScript', () => {
  it('takes an owner from the emailed link to their messages and back out', async () => {
    const owner = await h.createKey();
    const { context, page, problems } = await openPage();

    // 1. Ask for the link.
    await page.goto(`${h.url}/owner`);
    await page.getByLabel('The address that holds your keys').fill(owner.email);
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    await expect.poll(() => page.locator('[role=status]').textContent()).toContain('a sign-in link is on its way');
    const mail = await eventually(async () => signInMailsTo(h, owner.email)[0], 20_000, 'sign-in email');

    // 2. Sign in: the link shows a button; the button signs in.
    await page.goto(linkIn(h, mail).toString());
    expect(await context.cookies()).toEqual([]);
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${h.url}/owner/keys`);
    const [cookie] = await context.cookies();
    expect(cookie).toMatchObject({ name: 'owner_session', httpOnly: true, sameSite: 'Lax', path: '/owner' });
    await expect.poll(() => page.locator('main').textContent()).toContain(owner.key);
    await screenshot(page, 'owner-keys.png');

    // 3. A message goes from queued to sent.
    await h.workers[0]!.worker.pause();
    const first = await submitWithFile(owner.key, 'the first message');
    await page.getByRole('link', { name: 'Messages sent with this key' }).click();
    expect(await statusOf(page, first)).toBe('queued');
    // The list has one line for it; its page has the whole record.
    expect(await card(page, first).textContent()).not.toContain('order_number');
    expect(await page.locator('[data-zone-note]').textContent()).toContain('Times are in UTC');
    await card(page, first).getByRole('link', { name: 'the first message' }).click();
    await page.waitForURL(`${h.url}/owner/submissions/${first}`);
    expect(await card(page, first).textContent()).toContain('order_number');
    await h.workers[0]!.worker.resume();
    await reloadUntil(page, first, 'sent');

    // 4. Its file downloads byte-identical.
    const [download] = await Promise.all([page.waitForEvent('download'), card(page, first).getByRole('link', { name: 'invoice.pdf' }).click()]);
    expect(download.suggestedFilename()).toBe('invoice.pdf');
    expect((await readFile(await download.path())).equals(FILE)).toBe(true);

    // 5. A permanently failed one shows the SMTP reply; re-sent once the server accepts mail again.
    h.sink.behave(() => ({ code: 550, message: 'no such user here (browser journey)' }));
    const failed = (await submitJson(h, { access_key: owner.key, email: 'v@example.org', message: 'bounces' })).json.submission_id as string;
    await page.goto(`${h.url}/owner/keys/${owner.id}/submissions`);
    await reloadUntil(page, failed, 'failed');
    await screenshot(page, 'owner-submissions.png');
    await card(page, failed).getByRole('link').click();
    expect(await card(page, failed).locator('[data-field="error"]').textContent()).toContain('no such user here (browser journey)');
    h.sink.behave(undefined);
    await card(page, failed).getByRole('button', { name: 'Re-send email' }).click();
    await page.waitForURL(`${h.url}/owner/submissions/${failed}?notice=resent`);
    await expect.poll(() => page.locator('[role=status]').first().textContent()).toContain('queued to be sent again');
    await reloadUntil(page, failed, 'sent');

    // 6. Delete a message: its file is gone from storage.
    const [file] = await h.sql('select storage_key from attachments where submission_id = $1', [first]);
    expect(await listObjectKeys(h.storage)).toContain(file!.storage_key);
    await page.goto(`${h.url}/owner/submissions/${first}`);
    await card(page, first).getByRole('button', { name: 'Delete message and files' }).click();
    await page.waitForURL(`${h.url}/owner/keys/${owner.id}/submissions?notice=removed`);
    await expect.poll(() => page.locator('[role=status]').first().textContent()).toContain('Message deleted');
    expect(await card(page, first).count()).toBe(0);
    expect(await listObjectKeys(h.storage)).not.toContain(file!.storage_key);

    // 7. Sign out: the old cookie, put back, is refused.
    await page.getByRole('button', { name: 'Sign out' }).click();
    await page.waitForURL(`${h.url}/owner?notice=signed-out`);
    expect(await context.cookies()).toEqual([]);
    await context.addCookies([cookie!]);
    await page.goto(`${h.url}/owner/keys`);
    expect(page.url()).toBe(`${h.url}/owner`);
    await expect.poll(() => page.getByRole('button', { name: 'Email me a sign-in link' }).count()).toBe(1);

    expect(problems).toEqual([]);
  });

  it("refuses a POST from another site's page, even one carrying the CSRF token", async () => {
    const owner = await h.createKey();
    const { page } = await openPage();
    await signIn(page, owner.email);
    const csrf = await page.locator('input[name=csrf_token]').first().inputValue();

    // A page of another origin posts a form, token included: SameSite=Lax keeps the cookie back,
    // the browser says Sec-Fetch-Site: cross-site, and the service refuses before anything else.
    const evil = `data:text/html,${encodeURIComponent(`<form id=f method=POST action="${h.url}/owner/keys/${owner.id}">
      <input name=csrf_token value="${csrf}"><input name=action value=delete></form>`)}`;
    await page.goto(evil);
    const [response] = await Promise.all([
      page.waitForResponse(`${h.url}/owner/keys/${owner.id}`),
      page.locator('#f').evaluate((form) => (form as unknown as { submit: () => void }).submit()),
    ]);
    expect(response.status()).toBe(403);
    expect(await keyStatusOf(h, owner.id)).toBe('active');
  });

  it('sets the autoresponse with its subject and text, shows its preview, and refuses to turn it on empty', async () => {
    // The site the autoresponse links to is the key's own.
    const owner = await h.createKey({ domains: ['shop.example'], useDomain: false });
    const { page, problems } = await openPage();
    await signIn(page, owner.email);
    await page.goto(`${h.url}/owner/keys/${owner.id}/settings`);
    const card = page.getByRole('region', { name: 'Autoresponse' });
    await expect.poll(() => card.getByText('It carries no text a visitor wrote').count()).toBe(1);

    // On without a text: refused, and nothing is changed.
    await card.getByLabel('Send an autoresponse to each visitor').check();
    await card.getByLabel('Subject (one line').fill('We have your message');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await expect.poll(() => page.getByText('An autoresponse needs a subject and a text before it is turned on.').count()).toBe(2);
    const [before] = await h.sql('select autoresponse_enabled, autoresponse_subject from verification_keys where id = $1', [owner.id]);
    expect(before).toEqual({ autoresponse_enabled: false, autoresponse_subject: null });

    const saved = page.getByRole('region', { name: 'Autoresponse' });
    await saved.getByLabel('Send an autoresponse to each visitor').check();
    await saved.getByLabel('Subject (one line').fill('We have your message');
    await saved.getByLabel('Text (plain text').fill('Thank you.\n\nOur hours: https://shop.example/hours <b>soon</b>');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.waitForURL(`${h.url}/owner/keys/${owner.id}/settings?notice=saved`);
    const preview = page.getByRole('region', { name: 'Preview, as saved' });
    await expect.poll(() => preview.getByText('Subject: We have your message').count()).toBe(1);
    expect(await preview.getByRole('link', { name: 'https://shop.example/hours' }).getAttribute('href')).toBe('https://shop.example/hours');
    // The owner's markup is shown as text, never as markup.
    await expect.poll(() => preview.getByText('<b>soon</b>').count()).toBe(1);
    expect(await preview.locator('b').count()).toBe(0);
    const [after] = await h.sql('select autoresponse_enabled, autoresponse_subject, autoresponse_text from verification_keys where id = $1', [owner.id]);
    expect(after).toEqual({
      autoresponse_enabled: true,
      autoresponse_subject: 'We have your message',
      autoresponse_text: 'Thank you.\n\nOur hours: https://shop.example/hours <b>soon</b>',
    });
    // The refused save was answered 400, as it should be; nothing else went wrong.
    expect(problems).toEqual(['Failed to load resource: the server responded with a status of 400 (Bad Request)']);
  });

  it('adds a recipient on the key’s settings page, shows it waiting for its confirmation, refuses the key’s own address, and removes it', async () => {
    const owner = await h.createKey();
    const colleague = 'colleague@team.example';
    const { page, problems } = await openPage();
    await signIn(page, owner.email);
    await page.goto(`${h.url}/owner/keys/${owner.id}/settings`);
    const recipients = () => page.getByRole('region', { name: 'More recipients' });
    await expect
      .poll(() =>
        recipients()
          .getByText(`They get the emails only: signing in here, this key's settings and its messages stay with ${owner.email}.`, { exact: false })
          .count(),
      )
      .toBe(1);

    await recipients().getByLabel('Add an address').fill(colleague);
    await recipients().getByRole('button', { name: 'Add and ask it to confirm' }).click();
    await expect.poll(() => page.getByText('Address added: it receives copies once it confirms', { exact: false }).count()).toBe(1);
    await expect.poll(() => recipients().getByText('waiting for its confirmation').count()).toBe(1);
    await eventually(async () => h.sink.messages.find((mail) => mail.envelope.to.includes(colleague)), 20_000, 'the request to confirm');

    await recipients().getByLabel('Add an address').fill('Colleague@Team.example');
    await recipients().getByRole('button', { name: 'Add and ask it to confirm' }).click();
    // Said above the page and next to the address field.
    await expect.poll(() => page.getByText("Colleague@Team.example is one of this key's recipients already.").count()).toBe(2);

    await recipients().getByLabel('Add an address').fill(owner.email);
    await recipients().getByRole('button', { name: 'Add and ask it to confirm' }).click();
    await expect.poll(() => page.getByText(`${owner.email} is the key's own address: it receives every message already.`).count()).toBe(2);

    await recipients()
      .getByRole('button', { name: `Remove ${colleague}` })
      .click();
    await expect.poll(() => page.getByText('Address removed: it receives no more copies.', { exact: false }).count()).toBe(1);
    expect(await recipients().getByRole('listitem').count()).toBe(0);
    expect(await h.sql('select email from key_recipients where key_id = $1', [owner.id])).toEqual([]);
    // The refused additions were answered 400, as they should be; nothing else went wrong.
    expect(problems).toEqual(Array(2).fill('Failed to load resource: the server responded with a status of 400 (Bad Request)'));
    // One request to confirm, for the one address added.
    expect(h.sink.messages.filter((mail) => mail.envelope.to.includes(colleague))).toHaveLength(1);
  });

  it("sets the email's layout, shows it on the sample, and a plain HTML form on another site is emailed so", async () => {
    const owner = await h.createKey();
    const { page, problems } = await openPage();
    await signIn(page, owner.email);
    await page.goto(`${h.url}/owner/keys/${owner.id}/settings`);
    const card = page.getByRole('region', { name: 'Email', exact: true });
    await card.getByLabel('Subject pattern').fill('[{field:topic}] {subject}');
    await card.getByLabel('Fields shown first').fill('topic');
    await card.getByLabel('Fields left out of the email').fill('internal_ref');
    await card.getByLabel('Files', { exact: true }).selectOption('link');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.waitForURL(`${h.url}/owner/keys/${owner.id}/settings?notice=saved`);
    const preview = page.getByRole('region', { name: 'Preview with a sample message, as saved' });
    await expect.poll(() => preview.getByText('Subject: [(topic)] Question about an order').count()).toBe(1);
    expect((await preview.locator('pre').textContent())?.split('\n')[0]).toBe('topic: (topic)');

    // The site's own form, on its own origin: no script, a file, a field the email leaves out.
    const site = await serveHtml({
      '/': `<!doctype html><html lang="en"><title>Contact</title>
        <form action="${h.url}/api/contact-api/" method="post" enctype="multipart/form-data">
          <input type="hidden" name="access_key" value="${owner.key}">
          <label>Email <input name="email" value="visitor@example.org"></label>
          <label>Subject <input name="subject" value="Invoice question"></label>
          <label>Reference <input name="internal_ref" value="R-77"></label>
          <label>Topic <input name="topic" value="Billing"></label>
          <label>Message <textarea name="message">Where is my invoice?</textarea></label>
          <label>File <input type="file" name="invoice"></label>
          <button>Send</button>
        </form>`,
    });
    try {
      await page.goto(site.url);
      await page.getByLabel('File').setInputFiles({ name: 'scan.pdf', mimeType: 'application/pdf', buffer: FILE });
      await Promise.all([page.waitForURL((url) => url.pathname === '/contact/success/'), page.getByRole('button', { name: 'Send' }).click()]);
    } finally {
      await site.close();
    }
    const id = new URL(page.url()).searchParams.get('submission_id');
    const mail = await eventually(async () => h.sink.messages.find((m) => m.parsed.messageId === `<submission-${id}@example.test>`), 20_000, 'the email');
    expect(mail.parsed.subject).toBe('[Billing] Invoice question');
    expect(mail.envelope.to).toEqual([owner.email]);
    const text = mail.parsed.text ?? '';
    expect(text.indexOf('topic: Billing')).toBeGreaterThan(0);
    expect(text).not.toContain('R-77');
    expect(mail.parsed.attachments).toEqual([]);
    expect(text).toContain("This form's settings send files as links");
    // The field left out of the email stays in the message's record.
    const [row] = await h.sql('select custom_fields from submissions where id = $1', [id]);
    expect(row?.custom_fields).toContainEqual(['internal_ref', 'R-77']);
    expect(problems).toEqual([]);
  });

  it('adds a Slack channel and a Telegram chat through their forms, shows them shortened, and posts a message to both', async () => {
    const owner = await h.createKey();
    const { page, problems } = await openPage();
    await signIn(page, owner.email);
    await page.getByRole('link', { name: 'Webhooks and chat' }).click();
    await page.waitForURL(`${h.url}/owner/keys/${owner.id}/webhooks`);

    await page.getByLabel('Chat', { exact: true }).selectOption('slack');
    await page.getByLabel('Incoming-webhook URL').fill(slack.url);
    await page.getByRole('button', { name: 'Add chat channel' }).click();
    await expect.poll(() => page.locator('[role=status]').first().textContent()).toContain('Slack channel added');
    await page.getByLabel('Bot token').fill(telegram.secret);
    await page.getByLabel('Chat id').fill('-1001234567');
    await page.getByRole('button', { name: 'Add Telegram chat' }).click();
    await expect.poll(() => page.locator('[role=status]').first().textContent()).toContain('Telegram channel added');
    await screenshot(page, 'owner-chat.png');
    const cards = page.locator('section[data-kind]');
    expect(await cards.evaluateAll((nodes) => nodes.map((node) => node.getAttribute('data-kind')))).toEqual(['slack', 'telegram']);
    const html = await page.content();
    for (const secret of [slack.secret, telegram.secret]) expect(html).not.toContain(secret);

    const id = (await submitJson(h, { access_key: owner.key, email: 'visitor@example.org', subject: 'A quote', message: 'Hello @here, *ping*' })).json
      .submission_id as string;
    const link = `${h.config.PUBLIC_URL}/owner/submissions/${id}`;
    for (const standIn of [slack, telegram]) {
      const call = await eventually(
        async () => standIn.calls.find((entry) => JSON.stringify(entry.body).includes(link)),
        20_000,
        `the ${standIn.platform} message`,
      );
      expect(call.problems).toEqual([]);
    }
    await eventually(
      async () => {
        await page.reload();
        return (await page.locator('tr[data-status="sent"]').count()) === 2 ? true : undefined;
      },
      20_000,
      'both deliveries sent',
    );
    expect(problems).toEqual([]);
  });
});

describe('the owner console in a browser, with JavaScript', () => {
  it("refreshes a message's status in place, under the page's CSP, and writes times in the reader's zone and language", async () => {
    const owner = await h.createKey();
    const { page, problems } = await openPage(true, { locale: 'fr-FR', timezoneId: 'America/New_York' });
    page.on('pageerror', (error) => problems.push(error.message));
    await signIn(page, owner.email);

    await h.workers[0]!.worker.pause();
    const id = await submitWithFile(owner.key, 'watched live');
    await page.getByRole('link', { name: 'Messages sent with this key' }).click();
    expect(await statusOf(page, id)).toBe('queued');
    await h.workers[0]!.worker.resume();
    // No reload: the script updates the card.
    await expect.poll(() => statusOf(page, id), { timeout: 20_000 }).toBe('sent');
    // The list's times: relative, in French; the page says whose zone they are in.
    expect(await page.locator('[data-zone-note]').textContent()).toContain('America/New_York');
    expect(await card(page, id).locator('time').textContent()).toMatch(/maintenant|il y a/);
    await card(page, id).getByRole('link').click();
    await page.waitForURL(`${h.url}/owner/submissions/${id}`);
    const sent = card(page, id).locator('[data-field="sent"] time');
    const iso = (await sent.getAttribute('datetime'))!;
    expect(iso).toMatch(/^\d{4}-\d\d-\d\dT/);
    // New York's clock: five hours behind UTC in November; no "UTC" once the script has run.
    const local = new Date(Date.parse(iso) - 5 * 3_600_000);
    expect(await sent.textContent()).toContain(`${String(local.getUTCHours()).padStart(2, '0')}:${String(local.getUTCMinutes()).padStart(2, '0')}`);
    expect(await sent.textContent()).not.toContain('UTC');
    expect(await sent.getAttribute('title')).toMatch(/heure normale de l’Est|UTC−5|GMT-5|HNE/);
    expect(problems).toEqual([]);
  });

  it('refreshes what the status means and which buttons apply with the status, through a failure and a re-send', async () => {
    const owner = await h.createKey();
    const { page, problems } = await openPage(true);
    page.on('pageerror', (error) => problems.push(error.message));
    await signIn(page, owner.email);

    const hint = (id: string) => card(page, id).locator('[data-field="hint"]').textContent();
    const resend = (id: string) => card(page, id).getByRole('button', { name: 'Re-send email' });
    await h.workers[0]!.worker.pause();
    h.sink.behave(() => ({ code: 550, message: 'no such user here (live refresh)' }));
    const id = (await submitJson(h, { access_key: owner.key, email: 'v@example.org', message: 'refused, then re-sent' })).json.submission_id as string;
    try {
      await page.goto(`${h.url}/owner/submissions/${id}`);
      expect(await statusOf(page, id)).toBe('queued');
      expect(await resend(id).count()).toBe(0);
      await h.workers[0]!.worker.resume();
      // No reload: failed, its words, and the Re-send button appears.
      await expect.poll(() => statusOf(page, id), { timeout: 20_000 }).toBe('failed');
      expect(await hint(id)).toBe('not delivered: the last error says why; you can re-send it');
      await expect.poll(() => resend(id).count()).toBe(1);
    } finally {
      h.sink.behave(undefined);
    }

    await h.workers[0]!.worker.pause();
    await resend(id).click();
    await expect.poll(() => page.locator('[role=status]').first().textContent()).toContain('queued to be sent again');
    expect(await statusOf(page, id)).toBe('queued');
    await h.workers[0]!.worker.resume();
    // No reload: sent, with the words for sent, no Re-send button, and both attempts in the history.
    await expect.poll(() => statusOf(page, id), { timeout: 20_000 }).toBe('sent');
    expect(await hint(id)).toBe('accepted by the mail server');
    expect(await resend(id).count()).toBe(0);
    await expect.poll(() => card(page, id).locator('[data-field="history-count"]').textContent()).toBe('2 attempts');
    const history = await card(page, id).locator('[data-field="history"] li').allTextContents();
    expect(history).toEqual([
      // Numbered across both sends, and without the worker that made them.
      expect.stringMatching(/ · attempt 2 · sent · 250 [^·]*$/),
      expect.stringMatching(/ · attempt 1 · failed · .*550 no such user here \(live refresh\)$/),
    ]);
    expect(problems).toEqual([]);
  });
});

// A real browser (Debian's chromium via playwright-core) against the real service: the start page
// asks for a key and sends its plain HTML form with a file; a page on another origin posts with
// fetch(), which works only if the CORS headers are right. Each email is then found at the SMTP sink.
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, serveHtml, type StaticServer } from '../support/browser.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import type { ReceivedMail } from '../support/smtp-sink.ts';

let h: Harness;
let browser: Browser;
let otherSite: StaticServer;
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  h = await startHarness();
  browser = await launchChromium();
  otherSite = await serveHtml({ '/': CROSS_ORIGIN_PAGE });
});

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
  await otherSite?.close();
  await h?.stop();
});

/** A fresh page whose console errors (CSP violations among them) and script errors are collected. */
async function openPage(): Promise<{ page: Page; problems: string[] }> {
  const context = await browser.newContext();
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.setDefaultNavigationTimeout(15_000);
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
  });
  return { page, problems };
}

/** The delivered email of a submission: its Message-ID names the submission. */
const submissionMail = (id: string) =>
  eventually(async () => h.sink.messages.find((mail) => mail.parsed.messageId === `<submission-${id}@example.test>`), 20_000, `the email of submission ${id}`);

const screenshot = async (page: Page, name: string) => {
  const dir = process.env.BROWSER_SCREENSHOT_DIR;
  if (dir) await page.screenshot({ path: path.join(dir, name), fullPage: true });
};

describe('the start page in a browser', () => {
  it('gives a key, then sends its plain HTML form with a file to the key owner', async () => {
    const owner = `owner-${randomBytes(4).toString('hex')}@example.test`;
    const file = randomBytes(3000);
    const { page, problems } = await openPage();

    const response = await page.goto(`${h.url}/`);
    expect(response?.status()).toBe(200);
    expect(response?.headers()['content-security-policy']).toContain("script-src 'self'");
    expect(await page.getAttribute('html', 'lang')).toBe('en');
    await expect.poll(() => page.title()).toBe('Contact form service');

    // A wrong address is caught on the page, before anything is sent.
    const keyForm = page.locator('#key-form');
    const contactForm = page.locator('#contact-form');
    const keyEmail = keyForm.getByLabel('Your email address', { exact: true });
    await keyEmail.fill('not-an-address');
    await page.getByRole('button', { name: 'Generate a new key' }).click();
    const status = page.locator('#key-status');
    await expect.poll(() => status.textContent()).toContain('Enter a valid email address.');
    expect(await keyEmail.getAttribute('aria-invalid')).toBe('true');

    // 1. Request a key: the answer is shown in the live region and fills in the form's key.
    await keyEmail.fill(owner);
    await page.getByRole('button', { name: 'Generate a new key' }).click();
    await page.locator('#generated-key').waitFor();
    const key = (await page.locator('#generated-key').textContent())!.trim();
    expect(key).toMatch(/^[0-9a-f-]{36}$/);
    expect(await status.getAttribute('aria-live')).toBe('polite');
    expect(await status.textContent()).toContain(`New key generated and sent to ${owner}.`);
    expect(await contactForm.getByLabel('Access key', { exact: true }).inputValue()).toBe(key);
    // The snippet's key: in the form, and in the ALTCHA widget's challenge URL.
    expect(await page.locator('[data-snippet-key]').allTextContents()).toEqual([key, key]);
    await screenshot(page, 'home.png');

    // The key email reached its owner too.
    await eventually(async () => h.sink.messages.find((mail) => mail.envelope.to.includes(owner) && mail.parsed.text?.includes(key)), 20_000, 'the key email');

    // getKeys: the other button, same live region.
    await page.getByRole('button', { name: 'Email me my keys' }).click();
    await expect.poll(() => status.textContent()).toContain(`All keys have been emailed to ${owner}.`);

    // The honeypot is out of people's way: no tab stop, no autofill, hidden from assistive tech, 1px.
    const honeypot = page.locator('input[name="botcheck"]');
    expect(await honeypot.getAttribute('tabindex')).toBe('-1');
    expect(await honeypot.getAttribute('autocomplete')).toBe('off');
    const honeypotBox = page.locator('div[aria-hidden="true"]:has(input[name="botcheck"])');
    expect(await honeypotBox.count()).toBe(1);
    const box = await honeypotBox.boundingBox(); // its overflow is clipped to this
    expect((box?.width ?? 0) <= 1 && (box?.height ?? 0) <= 1).toBe(true);

    // 2. The live contact form, sent as a plain HTML form (multipart, no script involved).
    await contactForm.getByLabel('Your email address', { exact: true }).fill('visitor@example.org');
    await contactForm.getByLabel('Message', { exact: true }).fill('Hello from a real browser.\nWith a file.');
    await contactForm.getByLabel('Attachment').setInputFiles({ name: 'report.bin', mimeType: 'application/octet-stream', buffer: file });
    await Promise.all([
      page.waitForURL((url) => url.pathname === '/contact/success/', { waitUntil: 'load' }),
      page.getByRole('button', { name: 'Send message' }).click(),
    ]);

    const landed = new URL(page.url());
    expect(landed.origin).toBe(new URL(h.url).origin);
    const submissionId = landed.searchParams.get('submission_id');
    expect(submissionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await page.getByRole('heading', { level: 1 }).textContent()).toBe('Thank you!');
    expect(await page.getByRole('status').textContent()).toBe('Your message has been sent.');
    await screenshot(page, 'success.png');

    const mail: ReceivedMail = await submissionMail(submissionId!);
    expect(mail.envelope.to).toEqual([owner]);
    expect(mail.parsed.replyTo?.value[0]?.address).toBe('visitor@example.org');
    expect(mail.parsed.text).toContain('Hello from a real browser.');
    expect(mail.parsed.text).not.toContain('botcheck');
    expect(mail.parsed.attachments).toHaveLength(1);
    expect(mail.parsed.attachments[0]!.filename).toBe('report.bin');
    expect(Buffer.compare(mail.parsed.attachments[0]!.content, file)).toBe(0);

    // The success page leads back to the start page.
    await Promise.all([page.waitForURL((url) => url.pathname === '/'), page.getByRole('link', { name: 'Back to the start page' }).click()]);
    expect(problems).toEqual([]);
  });

  it('shows the error page, with a way back, for a refused plain form', async () => {
    const { page, problems } = await openPage();
    await page.goto(`${h.url}/`);
    const contactForm = page.locator('#contact-form');
    await contactForm.getByLabel('Access key', { exact: true }).fill('00000000-0000-4000-8000-000000000000');
    await contactForm.getByLabel('Your email address', { exact: true }).fill('visitor@example.org');
    await contactForm.getByLabel('Message', { exact: true }).fill('This key does not exist.');
    await Promise.all([
      page.waitForURL((url) => url.pathname === '/contact/error/', { waitUntil: 'load' }),
      page.getByRole('button', { name: 'Send message' }).click(),
    ]);
    expect(await page.getByRole('alert').textContent()).toBe('Invalid or inactive verification key.');
    expect(await page.getByRole('link', { name: 'Back to the start page' }).getAttribute('href')).toBe('/');
    await screenshot(page, 'error.png');
    // The page's own resources load under its CSP; only the refused POST is logged (a 303, not an error).
    expect(problems).toEqual([]);
  });
});

describe('CORS from another origin, in a browser', () => {
  it('lets a page on another origin post with fetch() and read the JSON answer', async () => {
    const key = await h.createKey({ email: 'cors-owner@example.test' });
    const api = new URL(h.url).origin;
    expect(otherSite.url).not.toBe(api);

    const { page, problems } = await openPage();
    await page.goto(`${otherSite.url}/?${new URLSearchParams({ api, key: key.key }).toString()}`);
    await page.locator('#result[data-done]').waitFor({ state: 'attached' });
    const results = JSON.parse((await page.locator('#result').textContent())!) as {
      formData?: { status: number; body: Record<string, unknown> };
      json?: { status: number; body: Record<string, unknown> };
      withoutCors?: string;
      error?: string;
    };

    expect(results.error).toBeUndefined();
    // Control: an API path without CORS headers cannot be read from this origin.
    expect(results.withoutCors).toBe('blocked');
    // multipart FormData with a file (a simple request) and JSON (preflighted with OPTIONS).
    for (const answer of [results.formData, results.json]) {
      expect(answer?.status).toBe(200);
      expect(answer?.body).toMatchObject({ success: true, message: 'Message sent successfully.', submission_id: expect.any(String) });
    }
    expect(results.formData!.body.attachments).toBe(1);

    const formMail = await submissionMail(results.formData!.body.submission_id as string);
    expect(formMail.envelope.to).toEqual(['cors-owner@example.test']);
    expect(formMail.parsed.replyTo?.value[0]?.address).toBe('cors-form@example.org');
    expect(formMail.parsed.attachments).toHaveLength(1);
    expect(formMail.parsed.attachments[0]!.filename).toBe('all-bytes.bin');
    expect(Buffer.compare(formMail.parsed.attachments[0]!.content, Buffer.from(Array.from({ length: 256 }, (_, i) => i)))).toBe(0);

    const jsonMail = await submissionMail(results.json!.body.submission_id as string);
    expect(jsonMail.envelope.to).toEqual(['cors-owner@example.test']);
    expect(jsonMail.parsed.text).toContain('JSON from another origin.');

    // The service saw the requests come from the other origin.
    const rows = await h.sql('select origin from submissions where id = any($1::uuid[])', [
      [results.formData!.body.submission_id, results.json!.body.submission_id],
    ]);
    expect(rows.map((row) => row.origin)).toEqual([otherSite.url, otherSite.url]);
    // The blocked control request is the only console error.
    expect(problems.filter((text) => !text.includes('/healthz') && !text.includes('net::ERR_FAILED'))).toEqual([]);
    expect(problems.some((text) => text.includes('blocked by CORS policy'))).toBe(true);
  });
});

/** The other site's page: its own script posts to the API given in its query string. */
const CROSS_ORIGIN_PAGE = `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>Another site</title></head>
<body>
<h1>Another site</h1>
<output id="result"></output>
<script>
(async () => {
  const params = new URLSearchParams(location.search);
  const api = params.get('api');
  const key = params.get('key');
  const endpoint = api + '/api/contact-api/';
  const read = async (response) => ({ status: response.status, body: await response.json() });
  const results = {};
  try {
    const form = new FormData();
    form.append('access_key', key);
    form.append('email', 'cors-form@example.org');
    form.append('message', 'FormData from another origin.');
    const bytes = new Uint8Array(256);
    for (let i = 0; i < 256; i++) bytes[i] = i;
    form.append('attachment', new File([bytes], 'all-bytes.bin', { type: 'application/octet-stream' }));
    results.formData = await read(await fetch(endpoint, { method: 'POST', body: form, headers: { Accept: 'application/json' } }));

    results.json = await read(await fetch(endpoint, {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', Accept: 'application/json' },
      body: JSON.stringify({ access_key: key, email: 'cors-json@example.org', message: 'JSON from another origin.' }),
    }));

    results.withoutCors = await fetch(api + '/healthz').then(() => 'readable', () => 'blocked');
  } catch (error) {
    results.error = String(error);
  }
  const output = document.getElementById('result');
  output.textContent = JSON.stringify(results);
  output.dataset.done = 'true';
})();
</script>
</body>
</html>`;

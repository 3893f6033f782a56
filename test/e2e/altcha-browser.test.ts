// A real browser solves ALTCHA on a plain HTML form of another site: the page loads the widget
// script from this service with one script tag, the widget fetches its challenge here (cross-origin),
// solves it when the visitor ticks the box, and the form posts; the submission is stored and emailed.
import { randomBytes } from 'node:crypto';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, serveHtml, type StaticServer } from '../support/browser.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';

let h: Harness;
let browser: Browser;
let site: StaticServer | undefined;

beforeAll(async () => {
  h = await startHarness(); // the default difficulty: what a visitor meets
  browser = await launchChromium();
});

afterAll(async () => {
  await browser?.close().catch(() => undefined);
  await site?.close();
  await h?.stop();
});

/** The form an owner pastes into a page: the documented snippet, nothing else. */
const formPage = (api: string, accessKey: string) => `<!doctype html>
<html lang="en">
<head><meta charset="utf-8"><title>A site with a contact form</title></head>
<body>
<script async defer src="${api}/assets/altcha.min.js"></script>
<form method="POST" action="${api}/api/contact-api/">
  <input type="hidden" name="access_key" value="${accessKey}">
  <label>Email <input type="email" name="email" required></label>
  <label>Message <textarea name="message" required></textarea></label>
  <altcha-widget challenge="${api}/api/contact-api/altcha-challenge?access_key=${accessKey}"></altcha-widget>
  <button type="submit">Send</button>
</form>
</body>
</html>`;

describe('ALTCHA in a browser', () => {
  it('solves the widget on a plain HTML form of another origin, and the submission is stored and emailed', async () => {
    const owner = `owner-${randomBytes(4).toString('hex')}@example.test`;
    const key = await h.createKey({ email: owner, captcha: 'altcha' });
    site = await serveHtml({ '/': formPage(h.url, key.key) });

    const context = await browser.newContext();
    const page = await context.newPage();
    page.setDefaultTimeout(30_000); // a solve takes about half a second; a busy machine, much more
    const problems: string[] = [];
    page.on('pageerror', (error) => problems.push(error.message));
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
    });

    await page.goto(`${site.url}/`);
    await page.getByLabel('Email').fill('visitor@example.org');
    await page.getByLabel('Message').fill('Sent through ALTCHA.');
    // The visitor ticks the box; the widget fetches a challenge, solves it and fills in its field.
    await page.getByText("I'm not a robot").click();
    const answer = page.locator('input[name="altcha"]');
    await expect.poll(async () => ((await answer.count()) > 0 ? await answer.inputValue() : ''), { timeout: 30_000 }).not.toBe('');

    await Promise.all([page.waitForURL((url) => url.pathname === '/contact/success/'), page.getByRole('button', { name: 'Send' }).click()]);
    const submissionId = new URL(page.url()).searchParams.get('submission_id');
    expect(submissionId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await page.getByRole('status').textContent()).toBe('Your message has been sent.');

    const [row] = await h.sql('select message, custom_fields from submissions where id = $1', [submissionId]);
    expect(row).toEqual({ message: 'Sent through ALTCHA.', custom_fields: [] });
    const mail = await eventually(
      async () => h.sink.messages.find((message) => message.parsed.messageId === `<submission-${submissionId}@example.test>`),
      20_000,
      'the email of the submission',
    );
    expect(mail.envelope.to).toEqual([owner]);
    expect(mail.parsed.text).toContain('Sent through ALTCHA.');
    expect(problems).toEqual([]);
    await context.close();
  });
});

// A real browser solves ALTCHA on a plain HTML form of another site: the page loads the widget
// script from this service with one script tag, the widget fetches its challenge here (cross-origin),
// solves it when the visitor ticks the box, and the form posts; the submission is stored and emailed.
// The start page's live form does the same under its own CSP, with the widget's build whose styles
// are a file.
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Browser, Page } from 'playwright-core';
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

  it("shows the widget in the start page's live form, which sends with it, under the page's CSP", async () => {
    const owner = `owner-${randomBytes(4).toString('hex')}@example.test`;
    const key = await h.createKey({ email: owner, captcha: 'altcha' });
    const context = await browser.newContext({ viewport: { width: 360, height: 740 } });
    const page = await context.newPage();
    page.setDefaultTimeout(30_000); // as above: a solve on a busy machine
    const problems = await watchProblems(page);

    await page.goto(`${h.url}/`);
    const form = page.locator('#contact-form');
    await form.getByLabel('Access key', { exact: true }).fill(key.key);
    await form.getByLabel('Your email address', { exact: true }).fill('visitor@example.org');
    await form.getByLabel('Message', { exact: true }).fill('Sent from the start page through ALTCHA.');
    await form.getByLabel("This key's captcha is ALTCHA").check();
    await page.getByText("I'm not a robot").click();
    await expect.poll(() => form.locator('altcha-widget [data-state]').first().getAttribute('data-state'), { timeout: 30_000 }).toBe('verified');
    await screenshot(page, 'home-altcha-360.png');
    // Nothing scrolls sideways at 360 px with the widget shown.
    expect(await page.evaluate<number>(OVERFLOW)).toBeLessThanOrEqual(0);
    // Before leaving the page: its CSP let the widget's script, styles, worker and fetch through.
    expect(await page.evaluate<string[]>('window.__violations')).toEqual([]);

    await Promise.all([page.waitForURL((url) => url.pathname === '/contact/success/'), form.getByRole('button', { name: 'Send message' }).click()]);
    const submissionId = new URL(page.url()).searchParams.get('submission_id');
    expect(await page.getByRole('status').textContent()).toBe('Your message has been sent.');
    const mail = await eventually(
      async () => h.sink.messages.find((message) => message.parsed.messageId === `<submission-${submissionId}@example.test>`),
      20_000,
      'the email of the submission',
    );
    expect(mail.envelope.to).toEqual([owner]);
    expect(mail.parsed.text).toContain('Sent from the start page through ALTCHA.');
    expect(mail.parsed.text).not.toContain('altcha');
    expect(problems()).toEqual([]);
    await context.close();
  });

  it('has no WCAG 2 A or AA violation on the start page with the widget shown, at 1100 px and at 360 px', async () => {
    const key = await h.createKey({ captcha: 'altcha' });
    // The checker is injected as a script of its own, which the page's CSP would refuse.
    const context = await browser.newContext({ bypassCSP: true, viewport: { width: 1100, height: 800 } });
    const page = await context.newPage();
    page.setDefaultTimeout(30_000);
    await page.goto(`${h.url}/`);
    await page.locator('#access_key').fill(key.key);
    await page.getByLabel("This key's captcha is ALTCHA").check();
    await page.getByText("I'm not a robot").waitFor();
    await page.addScriptTag({ path: AXE });
    const found: string[] = [];
    for (const width of [1100, 360]) {
      await page.setViewportSize({ width, height: 800 });
      const result = await page.evaluate<Array<{ id: string; help: string; nodes: Array<{ target: string[] }> }>>(AXE_RUN);
      found.push(...result.map((v) => `${width} px: ${v.id} (${v.help}) at ${v.nodes.map((n) => n.target.join(' ')).join(', ')}`));
    }
    expect(found).toEqual([]);
    await page.setViewportSize({ width: 1100, height: 800 });
    await screenshot(page, 'home-altcha.png');
    await context.close();
  });
});

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const WCAG = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];
/** Run in the page (strings: the tests are compiled without the DOM's types). */
const AXE_RUN = `axe.run(document, { runOnly: { type: 'tag', values: ${JSON.stringify(WCAG)} } })
  .then((result) => result.violations.map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })))`;
const OVERFLOW = 'document.documentElement.scrollWidth - document.documentElement.clientWidth';

/** With BROWSER_SCREENSHOT_DIR set, keeps a picture of the page (to look at the pages' look). */
const screenshot = async (page: Page, name: string) => {
  const dir = process.env.BROWSER_SCREENSHOT_DIR;
  if (dir) await page.screenshot({ path: path.join(dir, name), fullPage: true });
};

/**
 * What went wrong on a page: console errors (CSP violations among them), script errors, failed
 * requests; and each document's securitypolicyviolation events in window.__violations.
 */
async function watchProblems(page: Page): Promise<() => string[]> {
  const problems: string[] = [];
  page.on('console', (message) => {
    if (message.type() === 'error') problems.push(message.text());
  });
  page.on('pageerror', (error) => problems.push(error.message));
  page.on('response', (response) => {
    if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
  });
  await page.addInitScript(`window.__violations = [];
    document.addEventListener('securitypolicyviolation', (event) => {
      window.__violations.push(event.violatedDirective + ' ' + (event.blockedURI || 'inline'));
    });`);
  return () => problems;
}

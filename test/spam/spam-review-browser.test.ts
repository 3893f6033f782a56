// The owner's spam review in a real browser (Debian's chromium), JavaScript off: from the keys page
// to the Spam view, a message like those the owner marked spam held with its score and reasons,
// "Not spam" sends it to the inbox; "Spam" on a delivered message teaches the filter; the key's
// level changed in its settings.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RspamdService } from '../../src/local/rspamd.ts';
import { launchChromium } from '../support/browser.ts';
import { submitJson } from '../support/client.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { emailStatusOf } from '../support/rows.ts';
import { linkIn, signIn, signInMailsTo } from '../support/owner.ts';
import { formMessage, spamFilterEnv, startSpamFilter, teachByMarks } from '../support/spam-filter.ts';

const seeds = [1, 2, 3, 4, 5, 6, 7, 8];
const PITCH = formMessage('spam', 100).message;

let filter: RspamdService;
let h: Harness;
let browser: Browser;
let context: BrowserContext | undefined;

beforeAll(async () => {
  filter = await startSpamFilter();
  h = await startHarness({ env: spamFilterEnv(filter) });
  browser = await launchChromium();
}, 90_000);
afterAll(async () => {
  await context?.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
  await h?.stop();
  await filter?.stop();
});

async function submit(key: string, message: string): Promise<string> {
  const response = await submitJson(h, { access_key: key, email: 'visitor@example.org', message });
  expect(response.status).toBe(200);
  return response.json.submission_id as string;
}

const statusIn = (id: string) => emailStatusOf(h, id);

describe('reviewing spam in the owner console', () => {
  it('finds the held message in the Spam view, sends it with "Not spam", marks another "Spam", and sets the level', async () => {
    const key = await h.createKey();
    // The owner's own marks, made through the API: what holds a message at the normal level.
    await teachByMarks(h, key, await signIn(h, key.email), {
      spam: seeds.map((seed) => formMessage('spam', seed).message),
      ham: seeds.map((seed) => formMessage('ham', seed).message),
    });
    const heldId = await submit(key.key, PITCH);
    const plainId = await submit(key.key, 'Could you send me a quote for ten chairs?');
    await eventually(async () => ((await statusIn(heldId)) === 'spam' && (await statusIn(plainId)) === 'sent' ? true : undefined), 20_000, 'verdicts');

    context = await browser.newContext({ javaScriptEnabled: false });
    const page: Page = await context.newPage();
    page.setDefaultTimeout(15_000);
    await page.goto(`${h.url}/owner`);
    await page.getByLabel('The address that holds your keys').fill(key.email);
    const before = signInMailsTo(h, key.email).length;
    await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
    const mail = await eventually(async () => signInMailsTo(h, key.email)[before], 20_000, 'sign-in email');
    await page.goto(linkIn(h, mail).toString());
    await page.getByRole('button', { name: 'Sign in' }).click();
    await page.waitForURL(`${h.url}/owner/keys`);

    await page.getByRole('link', { name: 'Spam', exact: true }).click();
    await page.waitForURL(`${h.url}/owner/keys/${key.id}/spam`);
    const held = page.locator(`#s-${heldId}`);
    await expect.poll(() => held.locator('[data-field="spam"]').textContent()).toMatch(/^spam, score \d+(\.\d+)?: BAYES_OWNER_SPAM \d/);
    expect(await page.locator(`#s-${plainId}`).count()).toBe(0);

    await held.getByRole('button', { name: 'Not spam: send it to me' }).click();
    await page.waitForURL(new RegExp(`/owner/keys/${key.id}/spam\\?notice=ham-taught`));
    expect(await page.locator('.notice, [role="status"]').first().textContent()).toContain('Marked not spam');
    expect(await page.locator(`#s-${heldId}`).count()).toBe(0);
    await eventually(async () => h.sink.messages.find((m) => (m.parsed.text ?? '').includes(PITCH)), 20_000, 'the released email');

    // Any other message is marked spam from its page, reached from the list.
    await page.getByRole('link', { name: 'All messages' }).click();
    await page.locator(`#s-${plainId}`).getByRole('link').click();
    await page.waitForURL(`${h.url}/owner/submissions/${plainId}`);
    await page.getByRole('button', { name: 'Spam', exact: true }).click();
    await page.waitForURL(new RegExp(`/owner/submissions/${plainId}\\?notice=spam-taught`));
    expect(await page.locator(`#s-${plainId} [data-field="spam"]`).textContent()).toContain('you marked it spam');
    await page.goto(`${h.url}/owner/submissions/${heldId}`);
    expect(await page.locator(`#s-${heldId} [data-field="spam"]`).textContent()).toContain('you marked it not spam');
    expect(await statusIn(heldId)).toBe('sent');

    await page.goto(`${h.url}/owner/keys`);
    await page.getByRole('link', { name: 'Settings' }).click();
    await page.getByLabel(/^Spam filter/).selectOption('strict');
    await page.getByRole('button', { name: 'Save settings' }).click();
    await page.waitForURL(`${h.url}/owner/keys/${key.id}/settings?notice=saved`);
    await page.goto(`${h.url}/owner/keys`);
    expect(await page.locator('dd', { hasText: /^strict/ }).count()).toBe(1);
  });
});

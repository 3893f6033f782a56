// Every owner console page checked in Chromium, the signed-out ones too: axe-core's WCAG 2 A and AA
// rules find nothing, at a desktop width and at 360 px (where nothing may scroll sideways either);
// and the actions are reachable with the Tab key, each showing where the focus is.
import { createRequire } from 'node:module';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium } from '../support/browser.ts';
import { eventually, startHarness, TEST_SECRET, type Harness } from '../support/harness.ts';
import { buildKeyRecipient } from '../support/factories.ts';
import { createConsentSigner } from '../../src/shared/keys/consent.ts';
import { emailStatusOf } from '../support/rows.ts';
import { submitJson } from '../support/client.ts';
import { linkIn, signInMailsTo } from '../support/owner.ts';

const AXE = createRequire(import.meta.url).resolve('axe-core/axe.min.js');
const WCAG = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa'];

let h: Harness;
let browser: Browser;
let context: BrowserContext;
let page: Page;
const paths: Record<string, string> = {};
/** The page an added address confirms on (signed out). */
let recipientPage = '';

beforeAll(async () => {
  h = await startHarness();
  browser = await launchChromium();
  // The checker is injected as a script of its own: the pages' CSP would refuse it, as it should anything not theirs.
  context = await browser.newContext({ bypassCSP: true, viewport: { width: 1100, height: 800 } });
  page = await context.newPage();
  page.setDefaultTimeout(15_000);

  const owner = await h.createKey();
  // The keys page then shows the autoresponse's preview, with a paragraph and a link.
  await h.sql('update verification_keys set autoresponse_enabled = true, autoresponse_subject = $1, autoresponse_text = $2 where id = $3', [
    'We have your message',
    'Thank you for writing.\n\nOur hours: https://shop.example/hours',
    owner.id,
  ]);
  // The keys page lists two more recipients, one waiting for its confirmation; the messages' pages list their copies.
  await buildKeyRecipient(h, { key: owner, email: 'colleague@example.org' });
  const waiting = await buildKeyRecipient(h, { key: owner, email: 'new.colleague.with.a.long.address@subdomain.example.org', confirmed: false });
  recipientPage = createConsentSigner(TEST_SECRET).recipientLink('', waiting.id);
  const settled = (id: string) =>
    eventually(async () => {
      const status = await emailStatusOf(h, id);
      return status === 'sent' || status === 'failed' ? true : undefined;
    });
  const sent = (await submitJson(h, { access_key: owner.key, email: 'ana@example.org', subject: 'A quote, please', message: 'Hello!', company: 'Shop' })).json
    .submission_id as string;
  await settled(sent);
  h.sink.behave(() => ({ code: 550, message: 'no such mailbox (accessibility)' }));
  const failed = (await submitJson(h, { access_key: owner.key, email: 'bob@example.org', message: 'This one is refused by the mail server.' })).json
    .submission_id as string;
  await settled(failed);
  h.sink.behave(undefined);
  // The Webhooks and chat page then lists two chat channels (disabled: nothing is posted to them) and
  // a failed delivery, next to its forms.
  const [slackChannel] = await h.sql<{ id: string }>(
    `insert into webhook_endpoints (id, key_id, kind, url, secret_sealed, enabled, consecutive_failures, disabled_at)
     values (gen_random_uuid(), $1, 'slack', 'https://hooks.slack.com/services/T0001/B0001/…wxyz', 'v1:sealed', false, 20, now()) returning id`,
    [owner.id],
  );
  await h.sql(
    `insert into webhook_endpoints (id, key_id, kind, url, secret_sealed, chat_id, enabled)
     values (gen_random_uuid(), $1, 'telegram', 'https://api.telegram.org/bot7012345678:…wxyz/sendMessage', 'v1:sealed', '-1001234567890', false)`,
    [owner.id],
  );
  await h.sql(
    `insert into webhook_deliveries (id, endpoint_id, submission_id, email_status, email_attempts, last_error, last_response_code)
     values (gen_random_uuid(), $1, $2, 'failed', 3, 'HTTP 404: no_service', 404)`,
    [slackChannel!.id, sent],
  );
  // The message's page then shows a delivered webhook beside the failed chat post.
  const [webhook] = await h.sql<{ id: string }>(
    `insert into webhook_endpoints (id, key_id, kind, url, secret_sealed, enabled)
     values (gen_random_uuid(), $1, 'webhook', 'https://a-receiver-with-a-rather-long-host-name.subdomain.example.org/hooks/contact-form', 'v1:sealed', false) returning id`,
    [owner.id],
  );
  await h.sql(
    `insert into webhook_deliveries (id, endpoint_id, submission_id, email_status, email_attempts, last_response_code, sent_at)
     values (gen_random_uuid(), $1, $2, 'sent', 1, 200, now())`,
    [webhook!.id, sent],
  );

  paths.signIn = '/owner';
  await page.goto(`${h.url}/owner`);
  await page.getByLabel('The address that holds your keys').fill(owner.email);
  await page.getByRole('button', { name: 'Email me a sign-in link' }).click();
  const mail = await eventually(async () => signInMailsTo(h, owner.email)[0], 20_000, 'sign-in email');
  paths.link = linkIn(h, mail).toString().slice(h.url.length);
  await page.goto(`${h.url}${paths.link}`);
  await page.getByRole('button', { name: 'Sign in' }).click();
  await page.waitForURL(`${h.url}/owner/keys`);
  Object.assign(paths, {
    keys: '/owner/keys',
    settings: `/owner/keys/${owner.id}/settings`,
    list: `/owner/keys/${owner.id}/submissions`,
    filtered: `/owner/keys/${owner.id}/submissions?q=nothing&status=failed`,
    spam: `/owner/keys/${owner.id}/spam`,
    message: `/owner/submissions/${sent}`,
    failed: `/owner/submissions/${failed}`,
    overview: `/owner/keys/${owner.id}/overview`,
    allKeys: '/owner/overview',
    webhooks: `/owner/keys/${owner.id}/webhooks`,
    notFound: `/owner/submissions/${owner.id}`,
    badFilter: `/owner/keys/${owner.id}/submissions?from=someday`,
  });
  delete paths.signIn;
  delete paths.link;
});
afterAll(async () => {
  await context?.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
  await h?.stop();
});

type Violation = { id: string; help: string; nodes: Array<{ target: string[] }> };
/** Run in the page (strings: the tests are compiled without the DOM's types). */
const AXE_RUN = `axe.run(document, { runOnly: { type: 'tag', values: ${JSON.stringify(WCAG)} } })
  .then((result) => result.violations.map((v) => ({ id: v.id, help: v.help, nodes: v.nodes.map((n) => ({ target: n.target })) })))`;
const OVERFLOW = 'document.documentElement.scrollWidth - document.documentElement.clientWidth';
const FOCUSED = `(() => {
  const node = document.activeElement;
  if (!node || node === document.body) return undefined;
  const style = getComputedStyle(node);
  return { name: (node.getAttribute('aria-label') || node.textContent || node.name || '').trim(), outline: style.outlineStyle !== 'none' && parseFloat(style.outlineWidth) >= 2 };
})()`;

async function violations(path: string): Promise<string[]> {
  await page.goto(`${h.url}${path}`);
  await page.addScriptTag({ path: AXE });
  const found = await page.evaluate<Violation[]>(AXE_RUN);
  return found.map((violation) => `${path}: ${violation.id} (${violation.help}) at ${violation.nodes.map((node) => node.target.join(' ')).join(', ')}`);
}

describe('the owner console, checked by axe-core in Chromium', () => {
  // About 30 pages loaded and checked by axe-core: its time limit is for a busy 2-core machine.
  it('has no WCAG 2 A or AA violation on any page, at 1100 px and at 360 px, and nothing scrolls sideways at 360 px', async () => {
    const signedOut = await browser.newContext({ bypassCSP: true });
    const found: string[] = [];
    try {
      // The signed-out pages, in a context of their own.
      const outside = await signedOut.newPage();
      for (const width of [1100, 360]) {
        await outside.setViewportSize({ width, height: 740 });
        for (const path of ['/owner', '/owner/link?token=x', '/owner/link', recipientPage]) {
          await outside.goto(`${h.url}${path}`);
          await outside.addScriptTag({ path: AXE });
          const result = await outside.evaluate<Violation[]>(AXE_RUN);
          found.push(...result.map((violation) => `${path} at ${width} px: ${violation.id} (${violation.help})`));
          const overflow = await outside.evaluate<number>(OVERFLOW);
          if (overflow > 0) found.push(`${path}: ${overflow} px too wide at ${width} px`);
        }
      }
    } finally {
      await signedOut.close();
    }
    for (const path of Object.values(paths)) found.push(...(await violations(path)));
    await page.setViewportSize({ width: 360, height: 740 });
    const wide: string[] = [];
    for (const path of Object.values(paths)) {
      found.push(...(await violations(path)));
      const overflow = await page.evaluate<number>(OVERFLOW);
      if (overflow > 0) wide.push(`${path}: ${overflow} px too wide`);
    }
    await page.setViewportSize({ width: 1100, height: 800 });
    expect(found).toEqual([]);
    expect(wide).toEqual([]);
  }, 240_000);

  it('reaches every action of a message page and of the list with the Tab key, with the focus visible', async () => {
    const reached = async (path: string, names: string[]) => {
      await page.goto(`${h.url}${path}`);
      const seen = new Map<string, boolean>();
      for (let i = 0; i < 60 && seen.size < names.length; i++) {
        await page.keyboard.press('Tab');
        const focused = await page.evaluate<{ name: string; outline: boolean } | undefined>(FOCUSED);
        if (focused && names.includes(focused.name)) seen.set(focused.name, focused.outline);
      }
      return Object.fromEntries(names.map((name) => [name, seen.get(name) ?? 'not reached']));
    };
    const everywhere = (names: string[]) => Object.fromEntries(names.map((name) => [name, true]));
    const onFailed = ['Re-send email', 'Spam', 'Delete message and files', 'Sign out'];
    expect(await reached(paths.failed!, onFailed)).toEqual(everywhere(onFailed));
    const onList = ['Find', 'A quote, please', 'This one is refused by the mail server.', 'Download all as CSV', 'Overview'];
    expect(await reached(paths.list!, onList)).toEqual(everywhere(onList));
  });
});

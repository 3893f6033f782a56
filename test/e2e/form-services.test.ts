// Forms written for Formspree, Basin, Web3Forms and FormSubmit, as each service's documentation
// shows them (their hidden fields included), served from the site's own origin and sent by a real
// browser (chromium) to this service with only the form's action changed. The visitor lands where
// that service would have sent them; the owner's email has the subject and Reply-To that service
// would have set, and none of the reserved fields in it; nothing goes to a `_cc` address.
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchChromium, serveHtml, type StaticServer } from '../support/browser.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import type { ReceivedMail } from '../support/smtp-sink.ts';
import { mailSettled } from '../support/rows.ts';

// `{SITE}`: the site's own address, where the form's author sends visitors after a message.
const FORMS = {
  formspree: {
    action: 'https://formspree.io/f/xqkrnbwp',
    html: `<form action="https://formspree.io/f/xqkrnbwp" method="POST">
  <label>Your email: <input type="email" name="_replyto"></label>
  <label>Your message: <textarea name="message"></textarea></label>
  <input type="hidden" name="_subject" value="New submission from my site">
  <input type="hidden" name="_next" value="{SITE}/thanks">
  <input type="hidden" name="_cc" value="partner@elsewhere.example">
  <input type="text" name="_gotcha" style="display:none">
  <button type="submit">Send</button>
</form>`,
  },
  basin: {
    action: 'https://usebasin.com/f/a1b2c3d4e5f6',
    html: `<form action="https://usebasin.com/f/a1b2c3d4e5f6" method="POST">
  <label for="name">Name</label><input type="text" id="name" name="name">
  <label for="email">Email</label><input type="email" id="email" name="email" required>
  <label for="message">Message</label><textarea id="message" name="message"></textarea>
  <input type="hidden" name="_redirect" value="{SITE}/thanks">
  <input type="text" name="_gotcha" style="display:none !important" tabindex="-1" autocomplete="off">
  <input type="text" name="_honeypot" style="display:none !important" tabindex="-1" autocomplete="off">
  <button type="submit">Submit</button>
</form>`,
  },
  web3forms: {
    action: 'https://api.web3forms.com/submit',
    html: `<form action="https://api.web3forms.com/submit" method="POST">
  <input type="hidden" name="access_key" value="{KEY}">
  <input type="hidden" name="subject" value="New Submission from Web3Forms">
  <input type="hidden" name="from_name" value="Mission Control">
  <input type="hidden" name="redirect" value="{SITE}/thanks">
  <input type="email" name="email" required>
  <textarea name="message" required></textarea>
  <input type="checkbox" name="botcheck" class="hidden" style="display: none;">
  <button type="submit">Submit Form</button>
</form>`,
  },
  formsubmit: {
    action: 'https://formsubmit.co/your@email.com',
    html: `<form action="https://formsubmit.co/your@email.com" method="POST">
  <input type="text" name="name" required>
  <input type="email" name="email" required>
  <textarea name="message"></textarea>
  <input type="hidden" name="_next" value="{SITE}/thanks">
  <input type="hidden" name="_subject" value="New submission!">
  <input type="text" name="_honey" style="display:none">
  <input type="hidden" name="_captcha" value="false">
  <input type="hidden" name="_template" value="table">
  <input type="hidden" name="_cc" value="another@elsewhere.example,yetanother@elsewhere.example">
  <input type="hidden" name="_autoresponse" value="Thanks! Visit https://prize.example to claim yours">
  <button type="submit">Send</button>
</form>`,
  },
};
type Service = keyof typeof FORMS;

const RESERVED = ['_replyto', '_subject', '_next', '_cc', '_gotcha', '_redirect', '_honeypot', 'access_key', 'from_name', 'redirect', 'botcheck'];
const RESERVED_FORMSUBMIT = ['_honey', '_captcha', '_template', '_autoresponse'];

let h: Harness;
let browser: Browser;
let site: StaticServer;
let key: string;
const pages: Record<string, string> = {};
const contexts: BrowserContext[] = [];

beforeAll(async () => {
  h = await startHarness();
  key = (await h.createKey({ email: 'owner@example.test' })).key;
  browser = await launchChromium();
  site = await serveHtml(pages);
  pages['/thanks'] = '<!doctype html><title>Thanks</title><h1>Thanks for your message</h1>';
}, 90_000);

afterAll(async () => {
  for (const context of contexts) await context.close().catch(() => undefined);
  await browser?.close().catch(() => undefined);
  await site?.close();
  await h?.stop();
});

/** The service's form on the site, its action changed to this service and nothing else. */
function movedForm(service: Service): string {
  const { action, html } = FORMS[service];
  // Formspree and Basin and FormSubmit put the form in the path; Web3Forms carries the key in a field.
  const ours = service === 'web3forms' ? `${h.url}/api/contact-api/` : `${h.url}/f/${key}`;
  const page = html.replace(`action="${action}"`, `action="${ours}"`).replaceAll('{SITE}', site.url).replaceAll('{KEY}', key);
  expect(page).not.toBe(html.replaceAll('{SITE}', site.url).replaceAll('{KEY}', key));
  return `<!doctype html><title>Contact</title>${page}`;
}

async function openForm(service: Service): Promise<Page> {
  pages[`/${service}`] = movedForm(service);
  const context = await browser.newContext();
  contexts.push(context);
  const page = await context.newPage();
  page.setDefaultTimeout(15_000);
  page.setDefaultNavigationTimeout(15_000);
  await page.goto(`${site.url}/${service}`);
  return page;
}

/** Sends the form; the visitor's landing page and the owner's email. */
async function send(page: Page): Promise<{ landed: URL; mail: ReceivedMail }> {
  await Promise.all([page.waitForURL((url) => url.pathname === '/thanks', { waitUntil: 'load' }), page.locator('button[type=submit]').click()]);
  const landed = new URL(page.url());
  const id = landed.searchParams.get('submission_id');
  expect(id).toMatch(/^[0-9a-f-]{36}$/);
  const mail = await eventually(async () => h.sink.messages.find((sent) => sent.parsed.messageId === `<submission-${id}@example.test>`), 20_000, 'the email');
  return { landed, mail };
}

function expectNoReservedField(mail: ReceivedMail): void {
  for (const name of [...RESERVED, ...RESERVED_FORMSUBMIT]) {
    expect(mail.parsed.text, name).not.toContain(`${name}:`);
    expect(mail.parsed.html || '', name).not.toContain(`>${name}<`);
  }
}

const mailsTo = (address: string) => h.sink.messages.filter((sent) => sent.envelope.to.includes(address));

describe('a form written for another service, only its action changed', () => {
  it('Formspree: _replyto is the Reply-To, _subject the subject, _next where the visitor lands; _cc reaches nobody', async () => {
    const page = await openForm('formspree');
    await page.fill('[name=_replyto]', 'ada@visitors.example');
    await page.fill('[name=message]', 'Hello from a Formspree form.');
    const { landed, mail } = await send(page);
    expect(landed.origin).toBe(site.url);
    expect(await page.locator('h1').textContent()).toBe('Thanks for your message');
    expect(mail.envelope.to).toEqual(['owner@example.test']);
    expect(mail.parsed.subject).toBe('New submission from my site');
    expect(mail.parsed.replyTo?.value[0]?.address).toBe('ada@visitors.example');
    expect(mail.parsed.text).toContain('Hello from a Formspree form.');
    expectNoReservedField(mail);
    expect(mailsTo('partner@elsewhere.example')).toEqual([]);
  });

  it('Basin: _redirect is where the visitor lands; the email has the visitor’s name and address', async () => {
    const page = await openForm('basin');
    await page.fill('[name=name]', 'Grace');
    await page.fill('[name=email]', 'grace@visitors.example');
    await page.fill('[name=message]', 'Hello from a Basin form.');
    const { landed, mail } = await send(page);
    expect(landed.origin).toBe(site.url);
    expect(mail.parsed.subject).toBe('New contact form submission from grace@visitors.example');
    expect(mail.parsed.replyTo?.value[0]?.address).toBe('grace@visitors.example');
    expect(mail.parsed.text).toContain('name: Grace');
    expect(mail.parsed.text).toContain('Hello from a Basin form.');
    expectNoReservedField(mail);
  });

  it('Web3Forms: access_key in the form, subject, from_name as the sender’s name, redirect; the unticked botcheck lets it through', async () => {
    const page = await openForm('web3forms');
    await page.fill('[name=email]', 'alan@visitors.example');
    await page.fill('[name=message]', 'Hello from a Web3Forms form.');
    const { landed, mail } = await send(page);
    expect(landed.origin).toBe(site.url);
    expect(mail.parsed.subject).toBe('New Submission from Web3Forms');
    expect(mail.parsed.replyTo?.value[0]?.address).toBe('alan@visitors.example');
    expect(mail.parsed.text).toContain('name: Mission Control');
    expect(mail.parsed.text).toContain('Hello from a Web3Forms form.');
    expectNoReservedField(mail);
  });

  it('FormSubmit: _next, _subject; _template, _cc, _autoresponse and _captcha are the owner’s to decide and change nothing', async () => {
    const page = await openForm('formsubmit');
    await page.fill('[name=name]', 'Edsger');
    await page.fill('[name=email]', 'edsger@visitors.example');
    await page.fill('[name=message]', 'Hello from a FormSubmit form.');
    const { landed, mail } = await send(page);
    expect(landed.origin).toBe(site.url);
    expect(mail.parsed.subject).toBe('New submission!');
    expect(mail.parsed.replyTo?.value[0]?.address).toBe('edsger@visitors.example');
    expect(mail.parsed.text).toContain('name: Edsger');
    expectNoReservedField(mail);
    // Every email taken on is sent: a copy or an autoresponse would be in the sink now.
    await mailSettled(h);
    for (const address of ['another@elsewhere.example', 'yetanother@elsewhere.example', 'edsger@visitors.example']) expect(mailsTo(address)).toEqual([]);
    expect(h.sink.messages.some((sent) => sent.raw.toString('utf8').includes('prize.example'))).toBe(false);
  });

  it('a bot that fills a honeypot is answered as accepted, on the service’s own page (no key vouched for _next), and nothing is sent', async () => {
    const page = await openForm('formsubmit');
    await page.fill('[name=name]', 'Bot');
    await page.fill('[name=email]', 'bot@visitors.example');
    await page.fill('[name=message]', 'Cheap pills from a bot.');
    // What a bot does and a person cannot: fill the hidden field.
    await page.evaluate("document.querySelector('[name=_honey]').value = 'http://spam.example'");
    await Promise.all([page.waitForURL((url) => url.pathname === '/contact/success/', { waitUntil: 'load' }), page.locator('button[type=submit]').click()]);
    await mailSettled(h);
    expect(h.sink.messages.some((sent) => sent.raw.toString('utf8').includes('Cheap pills'))).toBe(false);
  });
});

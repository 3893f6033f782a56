// `npm run docs:screenshots`: takes the screenshots of the tour in docs/getting-started.md
// (docs/images/tour-*.png) and the owner console's (docs/images/console-*.png: the list, a message
// page, the overview, a message's page with its webhook's outcome) from a real run of the service. It starts `npm start`'s stack on a free port
// with a throwaway data directory, walks the tour in Chromium (Debian's `chromium`, or
// CHROMIUM_PATH), and stops it all.
import { spawn, type ChildProcess } from 'node:child_process';
import { lstat, mkdir, mkdtemp, readlink, rm } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type Browser, type Page } from 'playwright-core';
import { freePort, stopChild } from '../src/local/services.ts';
import { chromiumTool, requireSystemTool } from '../src/local/system-tools.ts';

const ROOT = path.resolve(import.meta.dirname, '..');
const IMAGES = path.join(ROOT, 'docs', 'images');
const OWNER = 'owner@example.com';
const VIEWPORT = { width: 1100, height: 760 };

type Stack = { child: ChildProcess; api: string; mailUi: string };

/** `npm start`'s launcher on its own data directory; resolves once its banner is printed. */
async function startStack(dataDir: string): Promise<Stack> {
  const port = await freePort();
  // The tour posts faster than a person would; the default limit is one POST per 3 s per address.
  // WEBHOOK_ALLOW as the tour in docs/getting-started.md has it: its webhook receiver runs on this machine.
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATA_DIR: dataDir,
    PORT: String(port),
    LOG_LEVEL: 'warn',
    RATE_LIMIT_MAX: '100',
    WEBHOOK_ALLOW: '127.0.0.1',
  };
  for (const name of ['DATABASE_URL', 'REDIS_URL', 'S3_ENDPOINT', 'SMTP_URL', 'PUBLIC_URL']) delete env[name];
  const child = spawn(process.execPath, [path.join(ROOT, 'src/local/start.ts')], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'inherit'] });
  let output = '';
  await new Promise<void>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('Press Ctrl+C to stop.')) resolve();
    });
    child.once('exit', (code) => reject(new Error(`npm start exited with ${code}:\n${output}`)));
  });
  const line = (label: string) => new RegExp(`^ {2}${label}\\s+(\\S+)$`, 'm').exec(output)?.[1] ?? '';
  return { child, api: line('API'), mailUi: line('Mail UI') };
}

/** The tour's webhook receiver: answers 200 to every POST, on port 8080 as docs/getting-started.md says, or any free one. */
async function startReceiver(): Promise<Server> {
  const server = createServer((req, res) => {
    req.resume();
    req.on('end', () => res.end());
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', (error: NodeJS.ErrnoException) => (error.code === 'EADDRINUSE' ? server.listen(0, '127.0.0.1', resolve) : reject(error)));
    server.listen(8080, '127.0.0.1', resolve);
  });
  return server;
}

type Mail = { subject: string; text: string; to: Array<{ address: string }> };

/** The newest email with this subject in the mail catcher, waiting for it a while. */
async function mailWith(stack: Stack, subject: RegExp): Promise<Mail> {
  for (let i = 0; i < 100; i++) {
    const mails = (await (await fetch(`${stack.mailUi}/api/email`)).json()) as Mail[];
    const found = mails.filter((mail) => subject.test(mail.subject)).at(-1);
    if (found) return found;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error(`no email with the subject ${subject} arrived`);
}

/** Visitors who write after the tour's own message. */
const VISITORS = [
  {
    email: 'bruno.costa@example.net',
    subject: 'Quote for 40 units',
    message: 'Hello, could you quote 40 units delivered to Porto before March?',
    company: 'Costa & Filhos',
  },
  { email: 'chen.wei@example.org', message: 'Is the large size back in stock? I would order two.' },
  { email: 'dalia@example.com', subject: 'Opening hours on Saturday', message: 'Are you open this Saturday afternoon?' },
];

const shoot = (page: Page, name: string, fullPage = false) =>
  page.screenshot({ path: path.join(IMAGES, name), fullPage }).then(() => console.log(`wrote docs/images/${name}`));

async function tour(page: Page, stack: Stack, receiverPort: number): Promise<void> {
  // 1. Get a key: the home page's first form; the key arrives by email and fills the contact form.
  await page.goto(stack.api);
  await page.fill('#key-email', OWNER);
  await page.click('button[value="generateKey"]');
  await page.locator('#key-status code').waitFor();
  const key = (await page.locator('#key-status code').textContent())?.trim() ?? '';
  await page.locator('#key-heading').scrollIntoViewIfNeeded();
  await shoot(page, 'tour-1-key.png');

  // 2. Send the form: the live contact form on the same page, with a file.
  await page.fill('#contact-email', 'ada@example.org');
  await page.fill('#contact-message', 'Hello! Could you send me a quote for 40 units? The spec sheet is attached.');
  await page.setInputFiles('#contact-file', { name: 'spec-sheet.pdf', mimeType: 'application/pdf', buffer: Buffer.from('%PDF-1.4\n% a sample file\n') });
  await page.locator('#contact-message').blur(); // no focus ring in the picture
  // The page's element, typed by hand: this program has no DOM types.
  await page.locator('#try-heading').evaluate((node: { scrollIntoView(): void }) => node.scrollIntoView());
  await shoot(page, 'tour-2-form.png');
  await Promise.all([page.waitForURL(/submission_id=/), page.click('#contact-form button[type="submit"]')]);
  // A few more visitors, so that the console's list and overview show what a day of messages looks like.
  for (const fields of VISITORS) await sendMessage(stack, key, fields);

  // 3. The owner console: sign in with the emailed link, then the key's messages.
  await page.goto(`${stack.api}/owner`);
  await page.fill('#owner-email', OWNER);
  await page.click('button[type="submit"]');
  const signIn = await mailWith(stack, /sign in/i);
  const link = /(https?:\/\/\S+\/owner\/link\S*)/.exec(signIn.text)?.[1];
  if (!link) throw new Error(`no sign-in link in:\n${signIn.text}`);
  await page.goto(link);
  await Promise.all([page.waitForURL(/\/owner\/keys/), page.click('button[type="submit"]')]);
  // Name the key on its settings page, as an owner with several forms would.
  const keys = page.url();
  await Promise.all([page.waitForURL(/\/settings/), page.click('a.button-link:has-text("Settings")')]);
  await page.fill('input[name="label"]', 'Contact page, shop.example');
  await Promise.all([page.waitForURL(/notice=saved/), page.click('button[value="save"]')]);
  await page.goto(keys);
  await page.click('a:has-text("Messages sent with this key")');
  // The worker has sent them by now; reload until the rows say so.
  const waiting = () => page.locator('.badge-queued, .badge-sending, .badge-retrying').count();
  for (let i = 0; i < 50 && ((await page.locator('.badge-sent').count()) === 0 || (await waiting()) > 0); i++) {
    await new Promise((resolve) => setTimeout(resolve, 200));
    await page.reload();
  }
  await shoot(page, 'tour-3-console.png');
  await shoot(page, 'console-list.png');

  // The console's other pages: one message's page, then the key's overview.
  const list = page.url();
  await page.click('td.subject a:has-text("Quote for 40 units")');
  await page.locator('article.submission').waitFor();
  await shoot(page, 'console-message.png', true);
  await page.goto(list.replace(/\/submissions.*$/, '/overview'));
  await page.locator('.chart svg').waitFor();
  await shoot(page, 'console-overview.png', true);
  await page.goto(list);

  // 4. Add a webhook on the key's Webhooks page, the receiver on this machine: its signing secret is shown once.
  await page.goto(page.url().replace(/\/submissions.*$/, '/webhooks'));
  await page.fill('#webhook-url', `http://127.0.0.1:${receiverPort}/hook`);
  await page.click('form:has(#webhook-url) button[type="submit"]');
  await page.locator('text=whsec_').first().waitFor();
  await shoot(page, 'tour-4-webhook.png');

  // A message after the webhook was added: its page shows the webhook's outcome beside the email's.
  const id = await sendMessage(stack, key, {
    email: 'erin.walsh@example.com',
    subject: 'Samples for the trade fair',
    message: 'Could you send two samples before the fair on the 14th?',
  });
  for (let i = 0; i < 50; i++) {
    await page.goto(`${stack.api}/owner/submissions/${id}`);
    if ((await page.locator('.outcomes .badge-sent').count()) > 0 && (await page.locator('article .badge-sent').count()) > 0) break;
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  await shoot(page, 'console-message-webhooks.png', true);
}

/** A visitor's message through the JSON API; its id. */
async function sendMessage(stack: Stack, key: string, fields: (typeof VISITORS)[number]): Promise<string> {
  const response = await fetch(`${stack.api}/api/contact-api/`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json' },
    body: JSON.stringify({ access_key: key, ...fields }),
  });
  if (!response.ok) throw new Error(`a sample message was refused: ${response.status} ${await response.text()}`);
  return ((await response.json()) as { submission_id: string }).submission_id;
}

/**
 * Removes the throwaway data directory. As root, npm start keeps the PostgreSQL cluster under
 * /var/lib/contact-form-service and links DATA_DIR/postgres to it: that goes too.
 */
async function removeData(dataDir: string): Promise<void> {
  const link = path.join(dataDir, 'postgres');
  if ((await lstat(link).catch(() => undefined))?.isSymbolicLink()) {
    await rm(path.resolve(dataDir, await readlink(link)), { recursive: true, force: true });
  }
  await rm(dataDir, { recursive: true, force: true });
}

// Before the stack starts: a missing browser is said at once, with nothing to stop.
const chromiumPath = requireSystemTool(chromiumTool('npm run docs:screenshots'));
const dataDir = await mkdtemp(path.join(tmpdir(), 'cfs-screenshots-'));
await mkdir(IMAGES, { recursive: true });
let stack: Stack | undefined;
let browser: Browser | undefined;
let receiver: Server | undefined;
let failed = false;
try {
  receiver = await startReceiver();
  stack = await startStack(dataDir);
  browser = await chromium.launch({
    executablePath: chromiumPath,
    headless: true,
    timeout: 30_000,
    args: ['--headless', '--no-sandbox', '--disable-gpu', '--no-first-run', '--disable-background-networking', '--disable-component-update', '--disable-sync'],
  });
  const page = await browser.newPage({ viewport: VIEWPORT });
  await tour(page, stack, (receiver.address() as AddressInfo).port);
} catch (error) {
  failed = true;
  console.error(error);
} finally {
  await browser?.close();
  receiver?.close();
  // SIGINT, as Ctrl+C: the launcher stops the API and the worker, then its local services.
  if (stack) await stopChild(stack.child, 'SIGINT', 30_000);
  await removeData(dataDir);
}
process.exit(failed ? 1 : 0);

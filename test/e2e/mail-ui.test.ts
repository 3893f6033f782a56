// The Mail UI address npm start shows: a browser gets MailDev's UI, curl and other non-HTML clients
// a plain-text answer that says to open it in a browser (MailDev alone answered them
// `{"error":"Not found"}`), and the API stays as it was.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startMailCatcher } from '../../src/local/services.ts';

let mail: Awaited<ReturnType<typeof startMailCatcher>>;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'cfs-mail-ui-'));
  mail = await startMailCatcher({ dir });
});
afterAll(async () => {
  await mail?.stop();
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('answers curl with plain text that says to open the address in a browser', async () => {
  const response = await fetch(mail.webUrl, { headers: { accept: '*/*', 'user-agent': 'curl/8.0' } });
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain/);
  expect(await response.text()).toContain(`open ${mail.webUrl} in a browser`);
});

it('serves the UI to a browser, and the API as before', async () => {
  const page = await fetch(mail.webUrl, { headers: { accept: 'text/html,application/xhtml+xml' } });
  expect(page.headers.get('content-type')).toMatch(/^text\/html/);
  expect(await page.text()).toMatch(/<html/i);
  const list = await fetch(`${mail.webUrl}/api/email`);
  expect(await list.json()).toEqual([]);
});

it('prints nothing of its own at start: the npm start banner names its address', async () => {
  const printed: unknown[][] = [];
  const { info, log } = console;
  console.info = console.log = (...args: unknown[]) => void printed.push(args);
  const other = await startMailCatcher({ dir: path.join(dir, 'other') }).finally(() => Object.assign(console, { info, log }));
  await other.stop();
  expect(printed).toEqual([]);
});

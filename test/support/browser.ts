// A real browser for the tests: Debian's chromium driven by playwright-core (which cannot download
// browsers here), and a tiny HTTP server for pages on another origin.
import { once } from 'node:events';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { chromium, type Browser } from 'playwright-core';
import { inject } from 'vitest';

/**
 * Launches headless chromium. Playwright gives every launch a fresh temporary profile
 * (--user-data-dir) and removes it on close.
 */
export async function launchChromium(): Promise<Browser> {
  // Found or installed by the global setup (CHROMIUM_PATH, else chromium on PATH); if missing, this says how to install it.
  const found = inject('testTools').chromium!;
  if (found.problem !== undefined) throw new Error(found.problem);
  return chromium.launch({
    executablePath: found.path,
    headless: true,
    timeout: 30_000,
    args: [
      '--headless',
      '--no-sandbox',
      '--disable-gpu',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-sync',
      '--no-first-run',
      '--disable-quic',
    ],
  });
}

export type StaticServer = { url: string; close: () => Promise<void> };

/** Serves fixed HTML pages, by path, on a loopback port of its own: another origin than the API. */
export async function serveHtml(pages: Record<string, string>, host = '127.0.0.1'): Promise<StaticServer> {
  const server: Server = createServer((req, res) => {
    const path = new URL(req.url ?? '/', 'http://placeholder.invalid').pathname;
    const html = pages[path];
    if (path === '/favicon.ico') {
      res.writeHead(204).end(); // what a browser asks for on its own: not a failure of the page
      return;
    }
    if (html === undefined) {
      res.writeHead(404, { 'content-type': 'text/plain' }).end('not found');
      return;
    }
    res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-store' }).end(html);
  });
  server.listen(0, host);
  await once(server, 'listening');
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

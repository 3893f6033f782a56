// The pages' one way out: a Nunjucks view from src/api/views in the shared page shell (layout.njk),
// with the security headers every page carries, and the static assets with caching headers.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Context } from 'koa';
import { createTemplates } from '../shared/infra/templates.ts';

const views = createTemplates(fileURLToPath(new URL('./views/', import.meta.url)), 'html');

const CSP_BASE = "default-src 'none'; style-src 'self'; img-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'";

export const SECURITY_HEADERS = {
  'Content-Security-Policy': CSP_BASE,
  'X-Content-Type-Options': 'nosniff',
  'Referrer-Policy': 'no-referrer',
};

/**
 * A page that runs its own scripts and calls this origin with fetch (the start page). Its ALTCHA
 * widget's solver is a same-origin worker, which worker-src (absent) lets through by script-src.
 */
export const SCRIPTED_PAGE_HEADERS = {
  ...SECURITY_HEADERS,
  'Content-Security-Policy': `${CSP_BASE}; script-src 'self'; connect-src 'self'`,
};

export type PageOptions = { status?: number; headers?: Record<string, string> };

/** Renders a view into the page shell and sends it, never cached (pages carry per-request data). */
export function renderPage(ctx: Context, view: string, data: Record<string, unknown> = {}, options: PageOptions = {}): void {
  ctx.set(options.headers ?? SECURITY_HEADERS);
  ctx.set('Cache-Control', 'no-store');
  ctx.type = 'html';
  ctx.body = views.render(view, { scripts: [], styles: [], ...data });
  if (options.status) ctx.status = options.status;
}

export type Asset = { path: string; type: string; body: Buffer; etag: string; maxAgeSeconds: number };

/**
 * A file of src/api/assets (or another file, by URL), read once at start, served with an ETag and
 * an hour of caching unless told otherwise.
 */
export function loadAsset(path: string, file: string | URL, type: string, maxAgeSeconds = 3600): Asset {
  const body = readFileSync(typeof file === 'string' ? new URL(`./assets/${file}`, import.meta.url) : file);
  return { path, type, body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`, maxAgeSeconds };
}

export function sendAsset(ctx: Context, asset: Asset): void {
  ctx.set({ 'X-Content-Type-Options': 'nosniff', 'Cache-Control': `public, max-age=${asset.maxAgeSeconds}` });
  ctx.type = asset.type;
  ctx.etag = asset.etag;
  ctx.status = 200; // ctx.fresh compares validators only for a 2xx answer
  if (ctx.fresh) {
    ctx.status = 304;
    return;
  }
  ctx.body = asset.body;
}

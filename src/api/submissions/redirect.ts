// Plain HTML form posts get a 303 to a page instead of JSON. Targets are checked so the service
// cannot be used as an open redirector to arbitrary schemes or hosts.
import type { ActiveKey } from '../../shared/keys/keys.ts';
import type { AppContext } from '../context.ts';
import { isDomainAllowed } from './domains.ts';

export const DEFAULT_SUCCESS_PATH = '/contact/success/';
export const DEFAULT_ERROR_PATH = '/contact/error/';

/** A browser's own form submission: a form content type, HTML preferred, no X-Requested-With. */
export function isBrowserFormPost(ctx: AppContext): boolean {
  return (
    Boolean(ctx.is(['application/x-www-form-urlencoded', 'multipart/form-data'])) && !ctx.get('X-Requested-With') && ctx.accepts('json', 'html') === 'html'
  );
}

/**
 * An absolute http(s) URL, or a path starting with a single `/`; otherwise the default.
 * For a key restricted to domains, an absolute URL must be on one of them.
 * Paths are checked after the URL parser has normalised them (dot segments, `%2e`, backslashes):
 * `/.//evil.com` would otherwise leave as `Location: //evil.com`, another host.
 */
export function redirectTarget(requested: string | undefined, fallback: string, key: ActiveKey | undefined): string {
  if (!requested) return fallback;
  if (/^\/(?![/\\])[^\s\u0000-\u001f\u007f]*$/.test(requested)) return normalisedPath(requested) ?? fallback;
  if (!URL.canParse(requested)) return fallback;
  const url = new URL(requested);
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return fallback;
  if (key?.useDomain && !isDomainAllowed(url.hostname.toLowerCase(), key.domains)) return fallback;
  return url.toString();
}

const PLACEHOLDER = 'http://placeholder.invalid';

/** The path as a browser would resolve it on this host, or undefined when it would leave the host. */
function normalisedPath(path: string): string | undefined {
  if (!URL.canParse(path, PLACEHOLDER)) return undefined;
  const url = new URL(path, PLACEHOLDER);
  if (url.origin !== PLACEHOLDER || /^\/[/\\]/.test(url.pathname)) return undefined;
  return `${url.pathname}${url.search}${url.hash}`;
}

export function withQuery(target: string, name: string, value: string): string {
  const url = new URL(target, PLACEHOLDER);
  url.searchParams.set(name, value);
  return target.startsWith('/') ? `${url.pathname}${url.search}${url.hash}` : url.toString();
}

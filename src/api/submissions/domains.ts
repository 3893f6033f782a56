// Domain restriction of keys: the request's domain is the host of Origin, or of Referer when
// there is no Origin; a port is ignored; an allowed `example.com` also covers its subdomains.
import type { ActiveKey } from '../../shared/keys/keys.ts';

export function requestDomain(origin: string, referer: string): string | undefined {
  const source = origin || referer;
  if (!source || !URL.canParse(source)) return undefined;
  const host = new URL(source).hostname.toLowerCase().replace(/\.$/, '');
  return host || undefined;
}

export function isDomainAllowed(host: string | undefined, allowed: string[]): boolean {
  if (!host) return false;
  return allowed.some((domain) => host === domain || host.endsWith(`.${domain}`));
}

/** Whether the key may be used for a request from `host`. */
export const keyAcceptsDomain = (key: ActiveKey, host: string | undefined) => !key.useDomain || isDomainAllowed(host, key.domains);

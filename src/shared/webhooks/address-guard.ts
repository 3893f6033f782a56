// Server-side request forgery guard for webhooks: a webhook URL is chosen by a key's owner, so the
// service must not become a way into the networks it can reach. Only public unicast addresses pass
// (loopback, private, link-local, CGNAT, multicast, unspecified, reserved, cloud metadata and the
// IPv6 forms that embed an IPv4 address are refused, IPv4-mapped IPv6 judged as the IPv4 inside,
// the deprecated IPv4-compatible ::/96 and NAT64 refused whole),
// unless WEBHOOK_ALLOW names the host or a range holding the address. `pinnedLookup` resolves, checks
// and hands the connection exactly the address it checked, so a second answer (DNS rebinding) is
// never used.
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { AddressPolicy } from '../infra/address-list.ts';

export { parseAllowList, type AddressPolicy } from '../infra/address-list.ts';

/** Every address of a name: the system resolver by default (a test gives answers that change). */
export type ResolveAll = (
  hostname: string,
  options: { all: true; family?: number | 'IPv4' | 'IPv6' | undefined },
  callback: (error: NodeJS.ErrnoException | null, addresses: LookupAddress[]) => void,
) => void;

/** ::/96 (RFC 4291, deprecated): `::127.0.0.1` and the like; `::` and `::1` have ranges of their own. */
const IPV4_COMPATIBLE = ipaddr.parseCIDR('::/96');

/** Why an address may not be reached (e.g. `loopback`), or undefined when it may. */
export function refusalOf(address: string, policy: AddressPolicy): string | undefined {
  if (!ipaddr.isValid(address)) return 'not an IP address';
  // IPv4-mapped IPv6 (::ffff:127.0.0.1) is judged as the IPv4 address it carries.
  const parsed = ipaddr.process(address);
  for (const [base, bits] of policy.ranges) {
    if (base.kind() === parsed.kind() && parsed.match(base, bits)) return undefined;
  }
  const range = parsed.range();
  if (range !== 'unicast') return RANGE_WORDS[range] ?? range;
  // ipaddr.js names no range for ::a.b.c.d: it embeds an IPv4 address (which automatic tunnelling
  // on some hosts routes to) and has no public use.
  if (parsed.kind() === 'ipv6' && parsed.match(IPV4_COMPATIBLE)) return 'deprecated IPv4-compatible';
  return undefined;
}

/** ipaddr.js's range names, as the refusal says them. */
const RANGE_WORDS: Record<string, string> = {
  linkLocal: 'link-local',
  carrierGradeNat: 'carrier-grade NAT',
  uniqueLocal: 'unique-local (private)',
  rfc6052: 'NAT64',
  rfc6145: 'IPv4-translated',
  ipv4Mapped: 'IPv4-mapped',
};

export class AddressRefusedError extends Error {
  override name = 'AddressRefusedError';
  readonly code = 'EADDRREFUSED';
}

const refusedError = (host: string, address: string, reason: string) =>
  new AddressRefusedError(`refused: ${host} is ${host === address ? '' : `resolved to ${address}, `}a ${reason} address; add it to WEBHOOK_ALLOW to allow it`);

/** Checks a URL's host when it is an IP literal (no lookup happens for those); undefined when fine or a name. */
export function refuseLiteralHost(hostname: string, policy: AddressPolicy): AddressRefusedError | undefined {
  const host = hostname.replace(/^\[|\]$/g, '');
  if (!isIP(host) || policy.hosts.has(host.toLowerCase())) return undefined;
  const reason = refusalOf(host, policy);
  return reason ? refusedError(host, host, reason) : undefined;
}

/**
 * What can be known about a webhook URL's host when the endpoint is created, before any lookup: an IP
 * literal refused by the rule, or `localhost` / `*.localhost`, which always mean loopback (RFC 6761).
 * Other names are judged at each delivery, since their answers can change.
 */
export function refuseAtCreation(hostname: string, policy: AddressPolicy): AddressRefusedError | undefined {
  const host = hostname.toLowerCase().replace(/\.$/, '');
  if (host !== 'localhost' && !host.endsWith('.localhost')) return refuseLiteralHost(hostname, policy);
  if (policy.hosts.has(host)) return undefined;
  for (const address of ['127.0.0.1', '::1']) {
    const reason = refusalOf(address, policy);
    if (reason) return refusedError(host, address, reason);
  }
  return undefined;
}

/**
 * A `lookup` for http.request: resolves every address of the name and refuses the name when any
 * of them is refused (a name mixing public and private answers is not trusted); the connection
 * then gets the first one, the one that was checked.
 */
export function pinnedLookup(policy: AddressPolicy, resolveAll: ResolveAll = dnsLookup): LookupFunction {
  return (hostname, options, callback) => {
    resolveAll(hostname, { all: true, family: options.family }, (error, addresses) => {
      if (error) return callback(error, '', 0);
      const allowedHost = policy.hosts.has(hostname.toLowerCase());
      for (const { address } of addresses) {
        const reason = allowedHost ? undefined : refusalOf(address, policy);
        if (reason) return callback(refusedError(hostname, address, reason), '', 0);
      }
      const first = addresses[0];
      if (!first) return callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), '', 0);
      if (options.all) (callback as unknown as (error: null, all: typeof addresses) => void)(null, [first]);
      else callback(null, first.address, first.family);
    });
  };
}

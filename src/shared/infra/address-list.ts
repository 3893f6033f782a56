// WEBHOOK_ALLOW's entries (host names, addresses, CIDR ranges) as a policy the webhook address guard
// (src/shared/webhooks/address-guard.ts) applies; here so that the config schema can check them.
import ipaddr from 'ipaddr.js';

export type AddressPolicy = { hosts: ReadonlySet<string>; ranges: ReadonlyArray<[ipaddr.IPv4 | ipaddr.IPv6, number]> };

/** The entries of WEBHOOK_ALLOW: CIDR ranges, single addresses, or host names. Throws on anything else. */
export function parseAllowList(entries: readonly string[]): AddressPolicy {
  const hosts = new Set<string>();
  const ranges: Array<[ipaddr.IPv4 | ipaddr.IPv6, number]> = [];
  for (const entry of entries) {
    if (entry.includes('/')) {
      if (!ipaddr.isValidCIDR(entry)) throw new Error(`not an address range: ${entry}`);
      ranges.push(ipaddr.parseCIDR(entry));
    } else if (ipaddr.isValid(entry)) {
      const address = ipaddr.parse(entry);
      ranges.push([address, address.kind() === 'ipv4' ? 32 : 128]);
    } else if (/^[a-z0-9.-]{1,253}$/i.test(entry)) {
      hosts.add(entry.toLowerCase());
    } else {
      throw new Error(`neither a host name nor an address range: ${entry}`);
    }
  }
  return { hosts, ranges };
}

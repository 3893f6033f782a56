// The client's address: the socket's, unless TRUST_PROXY names the proxies in front of the API.
// Then X-Forwarded-For is read from the right, past the trusted hops, so a client cannot
// choose its own address by sending the header itself.
import { BlockList, isIP } from 'node:net';
import ipaddr from 'ipaddr.js';
import type { TrustProxy } from '../shared/infra/config.ts';

const unmapped = (address: string) => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');

export type ClientIpResolver = (socketAddress: string, forwardedFor: string | undefined) => string;

export function clientIpResolver(trust: TrustProxy | undefined): ClientIpResolver {
  if (!trust) return (socketAddress) => unmapped(socketAddress);

  const forwarded = (header: string | undefined) =>
    (header ?? '')
      .split(',')
      .map((entry) => unmapped(entry.trim()))
      .filter((entry) => isIP(entry) !== 0);

  if ('hops' in trust) {
    return (socketAddress, header) => {
      // Nearest first: the socket, then X-Forwarded-For from its right end.
      const chain = [unmapped(socketAddress), ...forwarded(header).reverse()];
      return chain[Math.min(trust.hops, chain.length - 1)]!;
    };
  }

  const trusted = new BlockList();
  for (const range of trust.ranges) {
    const [address, prefix] = range.split('/') as [string, string | undefined];
    const family = isIP(address) === 6 ? 'ipv6' : 'ipv4';
    if (prefix === undefined) trusted.addAddress(address, family);
    else trusted.addSubnet(address, Number(prefix), family);
  }
  const isTrusted = (address: string) => trusted.check(address, isIP(address) === 6 ? 'ipv6' : 'ipv4');

  return (socketAddress, header) => {
    const chain = [unmapped(socketAddress), ...forwarded(header).reverse()];
    let index = 0;
    while (index < chain.length - 1 && isTrusted(chain[index]!)) index += 1;
    return chain[index]!;
  };
}

/**
 * Whom a rate limit counts: an IPv4 address as it is, an IPv6 address by its network prefix
 * (`2001:db8:1:2::/64` for any address in that /64), since one subscriber commonly holds a whole
 * /64 and could otherwise take a fresh bucket for every request.
 */
export function rateLimitSubject(clientIp: string, ipv6PrefixLength: number): string {
  // The common case, without parsing: an IPv4 address counts as it is.
  if (isIP(clientIp) === 4) return clientIp;
  if (!ipaddr.isValid(clientIp)) return clientIp;
  const address = ipaddr.process(clientIp); // an IPv4-mapped IPv6 address becomes IPv4
  if (address.kind() === 'ipv4') return address.toString();
  return `${ipaddr.IPv6.networkAddressFromCIDR(`${address.toString()}/${ipv6PrefixLength}`).toString()}/${ipv6PrefixLength}`;
}

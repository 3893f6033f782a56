// The client's address: the socket's, unless TRUST_PROXY names the proxies in front of the API.
// Then X-Forwarded-For is read from the right, past the trusted hops, so a client cannot
// choose its own address by sending the header itself.
import { BlockList, isIP } from 'node:net';
import type { TrustProxy } from '../shared/config.ts';

const unmapped = (address: string) => address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/, '');

export type ClientIpResolver = (socketAddress: string, forwardedFor: string | undefined) => string;

export function clientIpResolver(trust: TrustProxy | undefined): ClientIpResolver {
  if (!trust) return (socketAddress) => unmapped(socketAddress);

  const forwarded = (header: string | undefined) =>
    (header ?? '').split(',').map((entry) => unmapped(entry.trim())).filter((entry) => isIP(entry) !== 0);

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

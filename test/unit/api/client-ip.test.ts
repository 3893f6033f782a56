// Whom the rate limit counts a request against: an IPv4 client by its address, an IPv6 client by
// the network of RATE_LIMIT_IPV6_PREFIX bits its address is in (a client is given a whole /64).
// test/api/rate-limit.test.ts checks the limit itself, through HTTP and Redis.
import { describe, expect, it } from 'vitest';
import { rateLimitSubject } from '../../../src/api/client-ip.ts';

describe('the rate limit', () => {
  it('keys IPv4 addresses whole and IPv6 addresses on a configurable prefix length', () => {
    expect(rateLimitSubject('198.51.100.7', 64)).toBe('198.51.100.7');
    expect(rateLimitSubject('::ffff:198.51.100.7', 64)).toBe('198.51.100.7');
    expect(rateLimitSubject('2001:db8:1:2:3:4:5:6', 64)).toBe('2001:db8:1:2::/64');
    expect(rateLimitSubject('2001:db8:1:2::9', 64)).toBe('2001:db8:1:2::/64');
    expect(rateLimitSubject('2001:db8:1:3::9', 64)).toBe('2001:db8:1:3::/64');
    expect(rateLimitSubject('2001:db8:1:3::9', 48)).toBe('2001:db8:1::/48');
    expect(rateLimitSubject('2001:db8:1:3::9', 128)).toBe('2001:db8:1:3::9/128');
    expect(rateLimitSubject('::1', 64)).toBe('::/64');
  });
});

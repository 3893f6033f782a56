// 1 request per 3 seconds per client IP, shared through Redis; X-Forwarded-For only through
// trusted proxies; IPv6 clients by their /64. Each client is a different loopback source address
// (IPv6 clients arrive through the trusted proxy: loopback has only one IPv6 address).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startHarness, type Harness } from '../support/harness.ts';
import { request } from '../support/http.ts';
import { submitFrom } from '../support/client.ts';
import { sleep } from '../support/sleep.ts';

const LIMIT_MESSAGE = 'Too many requests. Please wait 3 seconds before trying again.';
const TOKEN = 'rate-limit-test-admin-token';
const rateLimitedCount = async (h: Harness) => {
  const text = await (await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
  return Number(/cfs_submissions_rejected_total\{reason="rate_limited"\} (\d+)/.exec(text)?.[1] ?? 0);
};

let limited: Harness;
let behindProxy: Harness;
let key: string;
beforeAll(async () => {
  limited = await startHarness({
    env: { RATE_LIMIT_MAX: '1', RATE_LIMIT_WINDOW_MS: '3000', SIGN_IN_LINK_USES_PER_MINUTE: '3', ADMIN_TOKEN: TOKEN },
    worker: false,
  });
  behindProxy = await startHarness({ env: { RATE_LIMIT_MAX: '1', RATE_LIMIT_WINDOW_MS: '3000', TRUST_PROXY: '127.0.0.0/8' }, worker: false });
  key = (await limited.createKey()).key;
});
afterAll(async () => {
  await limited?.stop();
  await behindProxy?.stop();
});

const submit = (h: Harness, localAddress: string, headers: Record<string, string> = {}) =>
  submitFrom(h, localAddress, { access_key: key, email: 'a@example.org', message: 'hi' }, headers);

describe('rate limit', () => {
  it('allows one request per 3 seconds per IP and answers the next with 429, counted as a rejected submission', async () => {
    const countedBefore = await rateLimitedCount(limited);
    const first = await submit(limited, '127.0.0.2');
    expect(first.status).toBe(200);
    const second = await submit(limited, '127.0.0.2');
    expect(second.status).toBe(429);
    expect(second.json).toEqual({ success: false, message: LIMIT_MESSAGE, errors: { __all__: [LIMIT_MESSAGE] } });
    expect(Number(second.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    expect(Number(second.headers['retry-after'])).toBeLessThanOrEqual(3);
    expect(second.headers['access-control-allow-origin']).toBe('*');
    expect(await limited.sql('select count(*)::int as n from submissions')).toEqual([{ n: 1 }]);
    expect(await rateLimitedCount(limited)).toBe(countedBefore + 1);
  });

  it('answers 429 over the limit whatever the body, before any complaint about it, and stores nothing', async () => {
    const address = '127.0.0.12';
    expect((await submit(limited, address)).status).toBe(200);
    const fields = { access_key: key, email: 'a@example.org', message: 'over the limit' };
    const bodies: Array<[string, string]> = [
      ['application/json', JSON.stringify(fields)],
      ['application/json', '{"broken'],
      ['application/json', JSON.stringify({ ...fields, padding: 'x'.repeat(20_000) })],
      ['application/x-www-form-urlencoded', new URLSearchParams(fields).toString()],
      ['text/plain', 'hello'],
    ];
    for (const [type, body] of bodies) {
      const refused = await request(`${limited.url}/api/contact-api/`, {
        method: 'POST',
        localAddress: address,
        headers: { 'content-type': type, accept: 'application/json' },
        body,
      });
      expect(refused.status, `${type} ${body.slice(0, 20)}`).toBe(429);
      expect(refused.json.message).toBe(LIMIT_MESSAGE);
    }
    expect(await limited.sql(`select count(*)::int as n from submissions where message = 'over the limit'`)).toEqual([{ n: 0 }]);
  });

  it('counts each client IP on its own', async () => {
    expect((await submit(limited, '127.0.0.3')).status).toBe(200);
    expect((await submit(limited, '127.0.0.4')).status).toBe(200);
    expect((await submit(limited, '127.0.0.3')).status).toBe(429);
  });

  it('counts POST / and POST /api/contact-api/ together, and not OPTIONS or pages', async () => {
    const address = '127.0.0.5';
    const options = await request(`${limited.url}/api/contact-api/`, { method: 'OPTIONS', localAddress: address });
    expect(options.status).toBe(204);
    expect((await request(`${limited.url}/healthz`, { localAddress: address })).status).toBe(200);
    const keys = await request(`${limited.url}/`, {
      method: 'POST',
      localAddress: address,
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: 'b@example.org', requestType: 'getKeys' }),
    });
    expect(keys.status).toBe(200);
    expect((await submit(limited, address)).status).toBe(429);
  });

  it('is not fooled by a spoofed X-Forwarded-For when TRUST_PROXY is unset', async () => {
    expect((await submit(limited, '127.0.0.6', { 'x-forwarded-for': '203.0.113.1' })).status).toBe(200);
    expect((await submit(limited, '127.0.0.6', { 'x-forwarded-for': '203.0.113.2' })).status).toBe(429);
  });

  it('reads X-Forwarded-For from the right through trusted proxies', async () => {
    // The proxy (127.0.0.7, trusted) appends the address it saw; a client-supplied left part is ignored.
    expect((await submit(behindProxy, '127.0.0.7', { 'x-forwarded-for': '198.51.100.1' })).status).toBe(403);
    expect((await submit(behindProxy, '127.0.0.7', { 'x-forwarded-for': '198.51.100.2' })).status).toBe(403);
    expect((await submit(behindProxy, '127.0.0.7', { 'x-forwarded-for': '198.51.100.1' })).status).toBe(429);
    expect((await submit(behindProxy, '127.0.0.7', { 'x-forwarded-for': '203.0.113.9, 198.51.100.2' })).status).toBe(429);
  });

  it('counts an IPv6 client by its /64, so a new address in the same /64 is no new client', async () => {
    // Through the trusted proxy (127.0.0.9): the client address is the X-Forwarded-For entry.
    const via = (address: string) => submit(behindProxy, '127.0.0.9', { 'x-forwarded-for': address });
    expect((await via('2001:db8:a:b::1')).status).toBe(403); // the key is unknown here: not limited
    expect((await via('2001:db8:a:b:ffff:ffff:ffff:fffe')).status).toBe(429);
    expect((await via('2001:0db8:000a:000b:0:0:0:2')).status).toBe(429);
    expect((await via('2001:db8:a:c::1')).status).toBe(403); // the next /64 is another client
  });

  it('lets the next request through once the window has passed', async () => {
    expect((await submit(limited, '127.0.0.8')).status).toBe(200);
    expect((await submit(limited, '127.0.0.8')).status).toBe(429);
    // Past the window (RATE_LIMIT_WINDOW_MS, 3 s): the time passing is what this test is about.
    await sleep(3_100);
    expect((await submit(limited, '127.0.0.8')).status).toBe(200);
  });
});

describe('rate limit of the owner console sign-in', () => {
  it('limits asking for a sign-in link per IP with the public POSTs, with nothing recorded past the limit', async () => {
    const owner = await limited.createKey();
    const ask = () =>
      request(`${limited.url}/owner/sign-in`, {
        method: 'POST',
        localAddress: '127.0.0.9',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: owner.email }),
      });
    expect((await ask()).status).toBe(200);
    const second = await ask();
    expect(second.status).toBe(429);
    expect(second.json.message).toBe(LIMIT_MESSAGE);
    expect(await limited.sql('select count(*)::int as n from key_emails where email = $1', [owner.email])).toEqual([{ n: 1 }]);
  });

  it("counts using a link apart: the owner's own form does not spend it, and SIGN_IN_LINK_USES_PER_MINUTE bounds it", async () => {
    const useByForm = () =>
      request(`${limited.url}/owner/link`, {
        method: 'POST',
        localAddress: '127.0.0.10',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: 'token=forged',
      });
    const useByApi = () =>
      request(`${limited.url}/owner/api/session`, {
        method: 'POST',
        localAddress: '127.0.0.10',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ token: 'forged' }),
      });
    // The owner tries their form, then signs in within the same window.
    expect((await submit(limited, '127.0.0.10')).status).toBe(200);
    expect((await submit(limited, '127.0.0.10')).status).toBe(429);
    expect((await useByForm()).status).toBe(400);
    expect((await useByApi()).status).toBe(400);
    expect((await useByForm()).status).toBe(400);
    // The fourth use in the minute (3 here), by the page or the API.
    const refused = await useByApi();
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(3);
    expect((await useByForm()).status).toBe(429);
  });
});

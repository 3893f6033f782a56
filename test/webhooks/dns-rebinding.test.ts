// DNS rebinding against the webhook sender: a name whose answer changes between lookups (first an
// allowed address, then a loopback one) must never get a request to the second address. The
// sender resolves once per delivery, checks every answer, and connects to the address it checked.
// Both receivers listen on the same port, so only the address tells them apart.
import type { LookupAddress } from 'node:dns';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parseAllowList, type ResolveAll } from '../../src/shared/webhooks/address-guard.ts';
import { postWebhook } from '../../src/workers/webhooks/webhook-http.ts';
import { startReceiver, type Receiver } from '../support/webhook-receiver.ts';

const NAME = 'hooks.rebinding.test';
const policy = parseAllowList(['127.0.0.2']);
let allowed: Receiver;
let internal: Receiver;
let port: number;

beforeAll(async () => {
  allowed = await startReceiver('127.0.0.2');
  port = Number(new URL(allowed.url).port);
  internal = await startReceiver('127.0.0.1', port);
});
afterAll(async () => {
  await allowed?.close();
  await internal?.close();
});

/** A resolver that gives the answers in turn (the last one from then on) and counts the lookups. */
function changingAnswers(...answers: string[][]): ResolveAll & { lookups: number } {
  let lookups = 0;
  const resolveAll: ResolveAll = (hostname, _options, callback) => {
    const answer = answers[Math.min(lookups, answers.length - 1)]!;
    lookups += 1;
    expect(hostname).toBe(NAME);
    const addresses: LookupAddress[] = answer.map((address) => ({ address, family: 4 }));
    setImmediate(() => callback(null, addresses));
  };
  return Object.defineProperty(resolveAll, 'lookups', { get: () => lookups }) as ResolveAll & { lookups: number };
}

const send = (resolveAll: ResolveAll) => postWebhook(`http://${NAME}:${port}/hook`, '{"event":"test"}', {}, { timeoutMs: 2_000, policy, resolveAll });

describe('webhook sender under DNS rebinding', () => {
  it('connects to the address it checked, looking the name up once per delivery, and refuses the next answer', async () => {
    const resolver = changingAnswers(['127.0.0.2'], ['127.0.0.1']);

    const first = await send(resolver);
    expect(first.status).toBe(200);
    expect(internal.received).toHaveLength(0);
    expect(allowed.received).toHaveLength(1);
    expect(resolver.lookups).toBe(1);

    // The name now points inside: the next delivery is refused before any byte is sent.
    await expect(send(resolver)).rejects.toThrow(`refused: ${NAME} is resolved to 127.0.0.1, a loopback address`);
    expect(resolver.lookups).toBe(2);
    expect(internal.received).toHaveLength(0);
    expect(allowed.received).toHaveLength(1);
  });

  it('refuses a name whose answer mixes an allowed and a refused address', async () => {
    const before = allowed.received.length;
    await expect(send(changingAnswers(['127.0.0.2', '127.0.0.1']))).rejects.toThrow(/resolved to 127\.0\.0\.1, a loopback address/);
    await expect(send(changingAnswers(['127.0.0.1', '127.0.0.2']))).rejects.toThrow(/resolved to 127\.0\.0\.1, a loopback address/);
    expect(internal.received).toHaveLength(0);
    expect(allowed.received).toHaveLength(before);
  });
});

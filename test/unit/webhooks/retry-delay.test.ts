// The webhook backoff: exponential with jitter, never sooner than the receiver's Retry-After
// (capped by the maximum backoff), with the jitter the workers use (Math.random); and Retry-After read
// as seconds or as an HTTP date. delivery-policy.test.ts pins the delays exactly, with the jitter given.
import { describe, expect, it } from 'vitest';
import { webhookRetryDelay } from '../../../src/shared/webhooks/delivery-policy.ts';
import { parseRetryAfter } from '../../../src/workers/webhooks/webhook-http.ts';

const config = { WEBHOOK_RETRY_BACKOFF_MS: 1_000, WEBHOOK_RETRY_MAX_BACKOFF_MS: 3_600_000 };
const asking = (retryAfterMs: number) => Object.assign(new Error('HTTP 429'), { retryAfterMs });

describe('webhookRetryDelay', () => {
  it('doubles per attempt, jittered, without a Retry-After', () => {
    for (let i = 0; i < 50; i++) {
      const delay = webhookRetryDelay(3, new Error('HTTP 503'), config);
      expect(delay).toBeGreaterThanOrEqual(2_000);
      expect(delay).toBeLessThanOrEqual(4_000);
    }
  });

  it('waits at least what Retry-After asks, up to the maximum backoff', () => {
    for (let i = 0; i < 50; i++) expect(webhookRetryDelay(1, asking(120_000), config)).toBe(120_000);
    expect(webhookRetryDelay(1, asking(7 * 24 * 3_600_000), config)).toBe(3_600_000);
    // A Retry-After shorter than the backoff does not shorten it.
    expect(webhookRetryDelay(5, asking(0), config)).toBeGreaterThanOrEqual(8_000);
  });
});

describe('parseRetryAfter', () => {
  it('reads seconds and HTTP dates, and ignores what it cannot read', () => {
    expect(parseRetryAfter('120')).toBe(120_000);
    const inAMinute = new Date(Date.now() + 60_000).toUTCString();
    expect(parseRetryAfter(inAMinute)).toBeGreaterThan(50_000);
    expect(parseRetryAfter('Wed, 21 Oct 2015 07:28:00 GMT')).toBe(0);
    expect(parseRetryAfter('soon')).toBeUndefined();
    expect(parseRetryAfter(undefined)).toBeUndefined();
  });
});

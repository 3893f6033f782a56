// The retry backoff: doubling from EMAIL_RETRY_BACKOFF_MS, capped at EMAIL_RETRY_MAX_BACKOFF_MS, with
// the jitter the workers use (Math.random). retry-policy.test.ts pins the same bounds exactly, with the
// jitter's extremes given in its place.
import { describe, expect, it } from 'vitest';
import { retryDelay } from '../../../src/shared/deliveries/retry-policy.ts';

const config = { EMAIL_RETRY_BACKOFF_MS: 30_000, EMAIL_RETRY_MAX_BACKOFF_MS: 3_600_000 };

describe('retryDelay', () => {
  it('doubles per attempt, jittered down to half at most', () => {
    for (const [attempt, ceiling] of [
      [1, 30_000],
      [2, 60_000],
      [5, 480_000],
    ] as const) {
      for (let i = 0; i < 50; i++) {
        const delay = retryDelay(attempt, config);
        expect(delay).toBeGreaterThanOrEqual(ceiling / 2);
        expect(delay).toBeLessThanOrEqual(ceiling);
      }
    }
  });

  it('never exceeds the cap, however many attempts (5 days of retries are about 130)', () => {
    for (const attempt of [8, 9, 20, 130, 1_000, 1_000_000]) {
      const delay = retryDelay(attempt, config);
      expect(delay).toBeGreaterThanOrEqual(1_800_000);
      expect(delay).toBeLessThanOrEqual(3_600_000);
    }
  });
});

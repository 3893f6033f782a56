// Where the workers keep the SMTP circuit breaker's state in Redis, shared by the fleet, and how the
// API (GET /readyz) and the metrics read it. The breaker itself: src/workers/delivery/smtp-breaker.ts.
import type { RedisClient } from '../infra/queues/redis.ts';

/** A hash {since, reason} that exists while the breaker is open. */
export const breakerKey = (prefix: string) => `${prefix}:smtp-breaker`;
/** Held (with an expiry) by the one job allowed to try the SMTP server while the breaker is open. */
export const probeKey = (prefix: string) => `${prefix}:smtp-probe`;

export type BreakerState = { state: 'closed' } | { state: 'open'; since: string; reason: string };

export async function readBreaker(redis: RedisClient, prefix: string): Promise<BreakerState> {
  const fields = await redis.hgetall(breakerKey(prefix));
  if (!fields.since) return { state: 'closed' };
  return { state: 'open', since: fields.since, reason: fields.reason ?? '' };
}

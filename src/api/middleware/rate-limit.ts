// Per-client-IP rate limit shared by every API process: one atomic Redis script per request
// (a fixed window: INCR, and PEXPIRE on the first hit). Over the limit: 429 with Retry-After.
// While Redis is unreachable the limit is not enforced: losing submissions would be worse.
import type { Middleware } from 'koa';
import type { RedisClient } from '../../shared/infra/queues/redis.ts';
import { rateLimitSubject } from '../client-ip.ts';
import type { AppState } from '../context.ts';
import { errors } from '../api-errors.ts';
import { withTimeout } from '../../shared/infra/timeout.ts';

const HIT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return { count, redis.call('PTTL', KEYS[1]) }`;

export type RateLimitOptions = {
  redis: RedisClient;
  prefix: string;
  windowMs: number;
  max: number;
  /** IPv6 clients are counted per network prefix of this length (default 64). */
  ipv6Prefix?: number;
  timeoutMs?: number;
};

export function rateLimit(options: RateLimitOptions): Middleware<AppState> {
  const { redis, prefix, windowMs, max, ipv6Prefix = 64, timeoutMs = 500 } = options;
  const windowSeconds = Math.ceil(windowMs / 1000);
  return async (ctx, next) => {
    const verdict = await hit(`${prefix}:ratelimit:${rateLimitSubject(ctx.state.clientIp, ipv6Prefix)}`).catch((error: unknown) => {
      ctx.state.log.warn({ err: error }, 'rate limit not checked: redis unavailable');
      return undefined;
    });
    if (verdict && verdict.count > max) {
      const error = errors.rateLimited(windowSeconds);
      error.headers['Retry-After'] = String(Math.max(1, Math.ceil(verdict.ttlMs / 1000)));
      throw error;
    }
    await next();
  };

  async function hit(key: string): Promise<{ count: number; ttlMs: number }> {
    if (redis.status !== 'ready') throw new Error(`redis is ${redis.status}`);
    const reply = await withTimeout(redis.eval(HIT, 1, key, windowMs), timeoutMs, 'rate limit check timed out');
    const [count, ttlMs] = reply as [number, number];
    return { count, ttlMs };
  }
}

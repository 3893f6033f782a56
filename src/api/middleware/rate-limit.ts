// Per-client-IP rate limit shared by every API process: a fixed window per client (INCR, and
// PEXPIRE on the first hit) counted by one atomic Redis script. The hits of concurrent requests go
// together (../../shared/infra/queues/batched-script.ts): one script call counts a burst of
// them, one round trip instead of one per request (docs/benchmarks.md#the-whole-pipeline), each in
// its order. Over the limit: 429 with Retry-After. While Redis is unreachable the limit is not
// enforced: losing submissions would be worse.
import type { Middleware } from 'koa';
import { batchedScript } from '../../shared/infra/queues/batched-script.ts';
import type { RedisClient } from '../../shared/infra/queues/redis.ts';
import { rateLimitSubject } from '../client-ip.ts';
import type { AppState } from '../context.ts';
import { errors } from '../api-errors.ts';

/** Each key counted once per hit, in order; answers each key's count and time to live. The keys share the prefix's hash tag, so one Redis Cluster slot. */
const HITS = `
local answer = {}
for index, key in ipairs(KEYS) do
  local count = redis.call('INCR', key)
  if count == 1 then redis.call('PEXPIRE', key, ARGV[1]) end
  answer[index * 2 - 1] = count
  answer[index * 2] = redis.call('PTTL', key)
end
return answer`;

export type RateLimitOptions = {
  redis: RedisClient;
  prefix: string;
  windowMs: number;
  max: number;
  /** IPv6 clients are counted per network prefix of this length (default 64). */
  ipv6Prefix?: number;
  timeoutMs?: number;
};

type Verdict = { count: number; ttlMs: number };

export function rateLimit(options: RateLimitOptions): Middleware<AppState> {
  const { redis, prefix, windowMs, max, ipv6Prefix = 64, timeoutMs = 500 } = options;
  const windowSeconds = Math.ceil(windowMs / 1000);
  // A failure is every hit's answer, never a retry one by one: Redis away, each request goes on.
  const hits = batchedScript<string, Verdict>(redis, {
    name: 'cfsRateLimitHits',
    lua: HITS,
    call: (keys) => ({ keys, args: [windowMs] }),
    answers: (reply, keys) => keys.map((_, index) => ({ count: reply[index * 2]!, ttlMs: reply[index * 2 + 1]! })),
    failFast: { timeoutMs, timeoutMessage: 'rate limit check timed out' },
  });

  // A request waits for the call in flight, then for its own: at most twice timeoutMs.
  return async (ctx, next) => {
    const verdict = await hits(`${prefix}:ratelimit:${rateLimitSubject(ctx.state.clientIp, ipv6Prefix)}`);
    if (verdict instanceof Error) ctx.state.log.warn({ err: verdict }, 'rate limit not checked: redis unavailable');
    else if (verdict.count > max) {
      const error = errors.rateLimited(windowSeconds);
      error.headers['Retry-After'] = String(Math.max(1, Math.ceil(verdict.ttlMs / 1000)));
      throw error;
    }
    await next();
  };
}

// Per-client-IP rate limit shared by every API process: a fixed window per client (INCR, and
// PEXPIRE on the first hit) counted by one atomic Redis script. The hits of concurrent requests go
// together (../../shared/infra/queues/batched-script.ts): one script call counts a burst of
// them, one round trip instead of one per request (docs/benchmarks.md#the-whole-pipeline), each in
// its order. A hit may carry a key to set once (an ALTCHA answer's replay mark), set in the same
// call where the hit is within the limit: the request's one round trip then does both. Over the
// limit: 429 with Retry-After. While Redis is unreachable the limit is not enforced: losing
// submissions would be worse.
import type { Middleware } from 'koa';
import { batchedScript } from '../../shared/infra/queues/batched-script.ts';
import type { RedisClient } from '../../shared/infra/queues/redis.ts';
import { rateLimitSubject } from '../client-ip.ts';
import type { AppContext, AppState } from '../context.ts';
import { errors } from '../api-errors.ts';

/**
 * Each hit in order: its counter (KEYS, odd) counted, and within the limit (ARGV[2]) its key to set
 * once (KEYS, even; the counter again where there is none) set to its token for its time to live
 * (ARGV from 3, in pairs; an empty token for none). Answers each hit's count, time to live, and 1
 * where it set its key, 0 where the key was set already, -1 where it set none. The keys share the
 * prefix's hash tag, so one Redis Cluster slot.
 */
const HITS = `
local answer = {}
local max = tonumber(ARGV[2])
for index = 1, #KEYS / 2 do
  local counter = KEYS[index * 2 - 1]
  local count = redis.call('INCR', counter)
  if count == 1 then redis.call('PEXPIRE', counter, ARGV[1]) end
  local token = ARGV[index * 2 + 1]
  local set = -1
  if token ~= '' and count <= max then
    set = redis.call('SET', KEYS[index * 2], token, 'PX', ARGV[index * 2 + 2], 'NX') and 1 or 0
  end
  answer[index * 3 - 2] = count
  answer[index * 3 - 1] = redis.call('PTTL', counter)
  answer[index * 3] = set
end
return answer`;

/** A key set once, to `token`, for `ttlMs`: set only by the first hit that carries it. */
export type OnceKey = { key: string; token: string; ttlMs: number };

export type RateLimiter = Middleware<AppState> & {
  /**
   * Counts the request's hit; throws the 429 over the limit. With `once`, answers whether this hit
   * set it (false: set before), or the Error where Redis did not answer.
   */
  hit: (ctx: AppContext, once?: OnceKey) => Promise<boolean | Error | undefined>;
};

export type RateLimitOptions = {
  redis: RedisClient;
  prefix: string;
  windowMs: number;
  max: number;
  /** IPv6 clients are counted per network prefix of this length (default 64). */
  ipv6Prefix?: number;
  timeoutMs?: number;
};

type Hit = { counter: string; once: OnceKey | undefined };
type Verdict = { count: number; ttlMs: number; set: boolean | undefined };

export function rateLimit(options: RateLimitOptions): RateLimiter {
  const { redis, prefix, windowMs, max, ipv6Prefix = 64, timeoutMs = 500 } = options;
  const windowSeconds = Math.ceil(windowMs / 1000);
  // A failure is every hit's answer, never a retry one by one: Redis away, each request goes on.
  const hits = batchedScript<Hit, Verdict>(redis, {
    name: 'cfsRateLimitHits',
    lua: HITS,
    call: (items) => ({
      keys: items.flatMap(({ counter, once }) => [counter, once?.key ?? counter]),
      args: [windowMs, max, ...items.flatMap(({ once }) => (once ? [once.token, once.ttlMs] : ['', 0]))],
    }),
    answers: (reply, items) =>
      items.map((_, index) => {
        const set = reply[index * 3 + 2]!;
        return { count: reply[index * 3]!, ttlMs: reply[index * 3 + 1]!, set: set === -1 ? undefined : set === 1 };
      }),
    failFast: { timeoutMs, timeoutMessage: 'rate limit check timed out' },
  });

  // A request waits for the call in flight, then for its own: at most twice timeoutMs.
  const hit: RateLimiter['hit'] = async (ctx, once) => {
    const verdict = await hits({ counter: `${prefix}:ratelimit:${rateLimitSubject(ctx.state.clientIp, ipv6Prefix)}`, once });
    if (verdict instanceof Error) {
      ctx.state.log.warn({ err: verdict }, 'rate limit not checked: redis unavailable');
      return once && verdict;
    }
    if (verdict.count > max) {
      const error = errors.rateLimited(windowSeconds);
      error.headers['Retry-After'] = String(Math.max(1, Math.ceil(verdict.ttlMs / 1000)));
      throw error;
    }
    return verdict.set;
  };
  const middleware: Middleware<AppState> = async (ctx, next) => {
    await hit(ctx);
    await next();
  };
  return Object.assign(middleware, { hit });
}

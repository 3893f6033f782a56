// A Redis script called once for a burst of concurrent callers (group commit, ../group-commit.ts):
// one round trip instead of one per caller, each caller's item handled in its order inside the
// script, one call in flight (the items that arrive meanwhile share the next). ioredis sends a
// defined script by its SHA-1 (EVALSHA), and its text only when Redis does not know it yet. A failed
// call is every item's answer, never retried one by one: each caller decides what Redis away means.
import { groupCommit } from '../group-commit.ts';
import { withTimeout } from '../timeout.ts';
import type { RedisClient } from './redis.ts';

export type BatchedScript<T, R> = (item: T) => Promise<R | Error>;

export type ScriptOptions<T, R> = {
  /** The command's name on the connection; defined once per connection. */
  name: string;
  /** Takes its items' keys in KEYS (one slot on a Redis Cluster: the keys share a hash tag) and returns a flat array of numbers. */
  lua: string;
  /** The keys and the other arguments of one call. */
  call: (items: T[]) => { keys: string[]; args: Array<string | number> };
  /** Each item's answer, in the items' order, from the script's reply. */
  answers: (reply: number[], items: T[]) => R[];
  /** Refuse at once while the connection is not ready, and give up a call after this long. */
  failFast?: { timeoutMs: number; timeoutMessage: string };
};

type WithCommand = Record<string, (keyCount: number, ...args: Array<string | number>) => Promise<number[]>>;

export function batchedScript<T, R>(redis: RedisClient, options: ScriptOptions<T, R>): BatchedScript<T, R> {
  const { name, lua, call, answers, failFast } = options;
  if (!(name in redis)) redis.defineCommand(name, { lua });
  const client = redis as unknown as WithCommand;
  return groupCommit<T, R | Error>(
    async (items) => {
      try {
        if (failFast && redis.status !== 'ready') throw new Error(`redis is ${redis.status}`);
        const { keys, args } = call(items);
        const reply = client[name]!(keys.length, ...keys, ...args);
        return answers(await (failFast ? withTimeout(reply, failFast.timeoutMs, failFast.timeoutMessage) : reply), items);
      } catch (error) {
        return items.map(() => (error instanceof Error ? error : new Error(String(error))));
      }
    },
    { maxInFlight: 1 },
  );
}

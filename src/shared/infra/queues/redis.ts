// Redis connections for the queues, the rate limiter and the breaker: one factory for a server or a cluster.
import { Cluster, Redis, type RedisOptions } from 'ioredis';

/** A single Redis server or a Redis Cluster (REDIS_CLUSTER=true, REDIS_URL naming one node). */
export type RedisClient = Redis | Cluster;

/**
 * How long a Redis connection may leave a command unanswered before it is taken for dead, closed and
 * made again. Behind a partition a connection hangs instead of failing, and TCP alone would keep it
 * for minutes. The API's commands take milliseconds: 5 s. A worker's longest wait is BullMQ's
 * blocking pop for the next job (at most 10 s): 30 s.
 */
export const REDIS_SOCKET_TIMEOUT_MS = { producer: 5_000, worker: 30_000 } as const;

/**
 * TCP keepalive: a connection silent for 10 s is probed every second, ten times (Node's interval and
 * count), so one whose server is gone fails within about 20 s, also while idle.
 */
const REDIS_KEEPALIVE_MS = 10_000;

/**
 * The API fails fast when Redis is away (the submission is already committed and the
 * reconciler enqueues it later); workers wait for Redis forever.
 */
export function createRedis(url: string, role: 'producer' | 'worker', cluster = false): RedisClient {
  const options: RedisOptions = {
    ...(role === 'worker' ? { maxRetriesPerRequest: null } : { maxRetriesPerRequest: 1, connectTimeout: 2_000 }),
    socketTimeout: REDIS_SOCKET_TIMEOUT_MS[role],
    keepAlive: REDIS_KEEPALIVE_MS,
  };
  if (!cluster) return new Redis(url, options);
  const seed = new URL(url);
  return new Cluster([{ host: seed.hostname, port: Number(seed.port) || 6379 }], {
    redisOptions: {
      ...options,
      ...(seed.username ? { username: decodeURIComponent(seed.username) } : {}),
      ...(seed.password ? { password: decodeURIComponent(seed.password) } : {}),
      ...(seed.protocol === 'rediss:' ? { tls: {} } : {}),
    },
    ...(role === 'worker' ? {} : { clusterRetryStrategy: (times: number) => Math.min(times * 200, 2_000) }),
  });
}

/**
 * Closes a Redis client at shutdown: QUIT when connected; when Redis is unreachable, QUIT would wait
 * in the offline queue for a reconnection that may never come, so the socket is just dropped.
 */
export function closeRedis(client: RedisClient): Promise<unknown> | undefined {
  if (client.status === 'ready') return client.quit();
  client.disconnect();
  return undefined;
}

export class RedisUnavailableError extends Error {
  override name = 'RedisUnavailableError';
}

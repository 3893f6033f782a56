// Redis connections for the queues, the rate limiter and the breaker: one factory for a server or a cluster.
import { Cluster, Redis, type ClusterNode, type ClusterOptions, type RedisOptions } from 'ioredis';

/** A single Redis server (found directly or through Sentinel) or a Redis Cluster (REDIS_CLUSTER=true, REDIS_URL naming one node). */
export type RedisClient = Redis | Cluster;

/** How to reach Redis beyond REDIS_URL: a Cluster, or the sentinels that name the primary. */
export type RedisTopology = {
  cluster?: boolean;
  sentinel?: { sentinels: string[]; master: string; password?: string | undefined };
};

/** The topology a process's configuration names. */
export function redisTopology(config: {
  REDIS_CLUSTER: boolean;
  REDIS_SENTINELS?: string[] | undefined;
  REDIS_SENTINEL_MASTER: string;
  REDIS_SENTINEL_PASSWORD?: string | undefined;
}): RedisTopology {
  if (!config.REDIS_SENTINELS) return { cluster: config.REDIS_CLUSTER };
  return { sentinel: { sentinels: config.REDIS_SENTINELS, master: config.REDIS_SENTINEL_MASTER, password: config.REDIS_SENTINEL_PASSWORD } };
}

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
export function createRedis(url: string, role: 'producer' | 'worker', topology: RedisTopology = {}): RedisClient {
  const options: RedisOptions = {
    ...(role === 'worker' ? { maxRetriesPerRequest: null } : { maxRetriesPerRequest: 1, connectTimeout: 2_000 }),
    socketTimeout: REDIS_SOCKET_TIMEOUT_MS[role],
    keepAlive: REDIS_KEEPALIVE_MS,
  };
  if (topology.sentinel) return new Redis(sentinelOptions(url, topology.sentinel, options));
  if (!topology.cluster) return new Redis(url, options);
  const seed = new URL(url);
  return new DiscoveringCluster([{ host: seed.hostname, port: Number(seed.port) || 6379 }], {
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
 * A Cluster client that connects again through every node it has seen, not only the one REDIS_URL
 * names. ioredis reconnects a client through its startup nodes alone: once the named node died (a
 * master killed, its replica promoted), a client that reconnected in full (BullMQ's blocking
 * connections do) failed with "None of startup nodes is available" until that node came back, and
 * its worker took no job meanwhile (test/faults/redis-cluster.test.ts). Its copies, the
 * connections BullMQ makes of it, do the same.
 */
class DiscoveringCluster extends Cluster {
  /** The nodes the configuration names: a name that resolves to whichever node is up outlives any node. */
  private readonly seeds: ClusterNode[];

  constructor(seeds: ClusterNode[], options: ClusterOptions, startFrom: ClusterNode[] = seeds) {
    super(startFrom, options);
    this.seeds = seeds;
    this.on('refresh', () => {
      const known = new Map<string, ClusterNode>();
      for (const node of [...seeds, ...this.nodes('all').map((redis) => ({ host: redis.options.host, port: redis.options.port }))]) {
        known.set(JSON.stringify(node), node);
      }
      this.startFrom = [...known.values()];
    });
  }

  /** ioredis keeps its startup nodes private; this is the one place that replaces them. */
  private get startFrom(): ClusterNode[] {
    return (this as unknown as { startupNodes: ClusterNode[] }).startupNodes;
  }

  private set startFrom(nodes: ClusterNode[]) {
    (this as unknown as { startupNodes: ClusterNode[] }).startupNodes = nodes;
  }

  /**
   * Settles once the client is ready, also when ioredis gets there by its own retry. ioredis leaves
   * its promise pending when the ready check fails after the slots were read (CLUSTER INFO says
   * `fail` between a master's death and its replica's promotion) and then connects on its own.
   * BullMQ awaits this promise when it resets a blocking connection, so a worker that reset one in
   * that window never took a job again.
   */
  override connect(): Promise<void> {
    const attempt = super.connect();
    return new Promise<void>((resolve, reject) => {
      const stop = () => {
        this.off('ready', ready);
        this.off('end', ended);
      };
      const ready = () => {
        stop();
        resolve();
      };
      const ended = () => {
        stop();
        reject(new Error('Connection is closed.'));
      };
      this.once('ready', ready);
      this.once('end', ended);
      attempt.then(ready, (error: unknown) => {
        stop();
        reject(error instanceof Error ? error : new Error(String(error)));
      });
    });
  }

  override duplicate(startupNodes: ClusterNode[] = [], options: ClusterOptions = {}): Cluster {
    const merged = { ...this.options, ...options };
    if (startupNodes.length > 0) return new DiscoveringCluster(startupNodes, merged);
    return new DiscoveringCluster(this.seeds, merged, [...this.startFrom]);
  }
}

/**
 * Through Sentinel: the sentinels are asked for the primary at every (re)connection. Without
 * ioredis's failover detector: with it, a worker's connection could stay stuck after a failover on
 * a busy machine, its jobs never finishing (test/faults/redis-sentinel.test.ts). A command a demoted
 * primary refuses (READONLY, before the connection follows the new one) reconnects and is sent again.
 */
function sentinelOptions(url: string, sentinel: NonNullable<RedisTopology['sentinel']>, options: RedisOptions): RedisOptions {
  const primary = new URL(url);
  const database = Number(primary.pathname.slice(1));
  return {
    ...options,
    sentinels: sentinel.sentinels.map((entry) => {
      const at = entry.lastIndexOf(':');
      return { host: entry.slice(0, at).replace(/^\[|\]$/g, ''), port: Number(entry.slice(at + 1)) };
    }),
    name: sentinel.master,
    ...(sentinel.password ? { sentinelPassword: sentinel.password } : {}),
    ...(primary.username ? { username: decodeURIComponent(primary.username) } : {}),
    ...(primary.password ? { password: decodeURIComponent(primary.password) } : {}),
    ...(Number.isInteger(database) && database > 0 ? { db: database } : {}),
    ...(primary.protocol === 'rediss:' ? { tls: {}, enableTLSForSentinelMode: true } : {}),
    reconnectOnError: (error) => (error.message.startsWith('READONLY') ? 2 : false),
  };
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

// A Redis Cluster on loopback for the cluster test: 3 masters, each with a replica that takes over
// when its master dies. Each node's log is kept, so that a failover that does not come can be read.
import type { ChildProcess } from 'node:child_process';
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Cluster, Redis } from 'ioredis';
import { freePort, startRedis, stopChild } from '../../src/local/services.ts';
import { withTimeout } from '../../src/shared/infra/timeout.ts';
import { sleep } from './sleep.ts';

/** A master killed by `killMasterOf`: its port, the port of its replica, and when it died. */
export type KilledMaster = { killedPort: number; replicaPort: number; killedAt: number };

export type RedisCluster = {
  url: string;
  /** The hash slot of `key`. */
  slotOf: (key: string) => Promise<number>;
  /** SIGKILL to the master that holds `key`'s slot. */
  killMasterOf: (key: string) => Promise<KilledMaster>;
  /** The port of a live replica. */
  replicaPort: () => Promise<number>;
  /** SIGKILL to the node at `port`. */
  kill: (port: number) => Promise<void>;
  /**
   * Waits until the node at `port` is a master (ROLE) owning `slot` by its own account, and every
   * other live master agrees; throws after `timeoutMs` with what each node said and logged.
   */
  waitForOwner: (port: number, slot: number, timeoutMs: number) => Promise<void>;
  /** Every key on each live master, by the master's port. */
  keysByMaster: () => Promise<Map<number, string[]>>;
  stop: () => Promise<void>;
};

/** How long a node may go unanswered before the others take it for failing. */
export const CLUSTER_NODE_TIMEOUT_MS = 2_000;

/** One line of CLUSTER NODES: `<id> <ip:port@bus> <flags> <master id|-> <ping> <pong> <epoch> <link> <slot ranges…>`. */
type NodeLine = { id: string; port: number; flags: string[]; masterId: string; link: string; ranges: Array<[number, number]> };

export function parseClusterNodes(text: string): NodeLine[] {
  return text
    .trim()
    .split('\n')
    .filter(Boolean)
    .map((line) => {
      const [id, address, flags, masterId, , , , link, ...slots] = line.trim().split(' ');
      const ranges = slots
        // An importing or migrating slot is shown in brackets; the test moves none.
        .filter((slot) => !slot.startsWith('['))
        .map((slot): [number, number] => {
          const [from, to = from] = slot.split('-').map(Number);
          return [from!, to!];
        });
      return { id: id!, port: Number(address!.split('@')[0]!.split(':').at(-1)), flags: flags!.split(','), masterId: masterId!, link: link!, ranges };
    });
}

const owns = (line: NodeLine, slot: number) => line.ranges.some(([from, to]) => slot >= from && slot <= to);

/** One command to one node on a connection of its own, bounded in time (a busy node may be slow). */
async function ask(port: number, ...args: string[]): Promise<unknown> {
  const client = new Redis({
    port,
    host: '127.0.0.1',
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 2_000,
    commandTimeout: 5_000,
    retryStrategy: () => null,
  });
  client.on('error', () => undefined);
  try {
    await client.connect();
    return await client.call(args[0]!, ...args.slice(1));
  } finally {
    client.disconnect();
  }
}

type ClusterNode = { port: number; child: ChildProcess; log: string[]; stop: () => Promise<void> };

export async function startRedisCluster(): Promise<RedisCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cfs-cluster-'));
  const nodes: ClusterNode[] = [];
  const killed = new Set<number>();
  const stop = async () => {
    for (const node of nodes) await node.stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    const taken = new Set<number>();
    const distinctFreePort = async () => {
      let port = await freePort();
      while (taken.has(port)) port = await freePort();
      taken.add(port);
      return port;
    };
    for (let i = 0; i < 6; i++) {
      const port = await distinctFreePort();
      const started = await startRedis({
        port,
        extraArgs: [
          '--dir',
          dir,
          '--cluster-enabled',
          'yes',
          // A bus port of its own: the default, port + 10,000, can fall in the kernel's ephemeral
          // range, where an outgoing connection may take it before Redis binds it.
          '--cluster-port',
          String(await distinctFreePort()),
          '--cluster-config-file',
          path.join(dir, `nodes-${port}.conf`),
          '--cluster-node-timeout',
          String(CLUSTER_NODE_TIMEOUT_MS),
        ],
      });
      const log: string[] = [];
      started.child.stdout?.on('data', (chunk: Buffer) => log.push(...chunk.toString().trimEnd().split('\n')));
      nodes.push({ port, child: started.child, log, stop: started.stop });
    }
    const created = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', '1', '--cluster-yes'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed:\n${created.stdout}${created.stderr}`);
    await waitForClusterReady(nodes.map((node) => node.port));
  } catch (error) {
    await stop();
    throw error;
  }

  const alive = () => nodes.filter((node) => !killed.has(node.port));
  const nodesSeenBy = async (port: number) => parseClusterNodes(String(await ask(port, 'CLUSTER', 'NODES')));
  const slotOf = async (key: string) => Number(await ask(alive()[0]!.port, 'CLUSTER', 'KEYSLOT', key));

  /** What each live node says of the cluster and the end of its log: the evidence of a failover that did not come. */
  const report = async () => {
    const parts: string[] = [];
    for (const node of nodes) {
      const said = killed.has(node.port)
        ? '(killed)'
        : await Promise.all([ask(node.port, 'ROLE'), ask(node.port, 'CLUSTER', 'NODES'), ask(node.port, 'CLUSTER', 'INFO')])
            .then(([role, seen, info]) => `ROLE ${JSON.stringify(role)}\n${String(seen)}${String(info).split('\n').slice(0, 3).join('\n')}`)
            .catch((error: unknown) => `(no answer: ${(error as Error).message})`);
      parts.push(`--- node ${node.port}\n${said}\nlog:\n${node.log.slice(-25).join('\n')}`);
    }
    return parts.join('\n');
  };

  return {
    url: `redis://127.0.0.1:${nodes[0]!.port}`,
    slotOf,
    async killMasterOf(key) {
      const slot = await slotOf(key);
      const seen = await nodesSeenBy(alive()[0]!.port);
      const master = seen.find((line) => line.flags.includes('master') && owns(line, slot));
      const replica = master && seen.find((line) => line.flags.includes('slave') && line.masterId === master.id);
      if (!master || !replica) throw new Error(`no master with a replica holds slot ${slot}:\n${await report()}`);
      killed.add(master.port);
      await stopChild(nodes.find((node) => node.port === master.port)!.child, 'SIGKILL');
      return { killedPort: master.port, replicaPort: replica.port, killedAt: Date.now() };
    },
    async replicaPort() {
      const replica = (await nodesSeenBy(alive()[0]!.port)).find((line) => line.flags.includes('slave') && !killed.has(line.port));
      if (!replica) throw new Error(`no live replica:\n${await report()}`);
      return replica.port;
    },
    async kill(port) {
      killed.add(port);
      await stopChild(nodes.find((node) => node.port === port)!.child, 'SIGKILL');
    },
    async waitForOwner(port, slot, timeoutMs) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const settled = await (async () => {
          const role = (await ask(port, 'ROLE')) as [string, ...unknown[]];
          if (role[0] !== 'master') return false;
          for (const node of alive()) {
            const owner = (await nodesSeenBy(node.port)).find((line) => owns(line, slot) && line.flags.includes('master') && !line.flags.includes('fail'));
            if (owner?.port !== port) return false;
          }
          return true;
        })().catch(() => false);
        if (settled) return;
        if (Date.now() > deadline) throw new Error(`node ${port} was not the master of slot ${slot} for every node within ${timeoutMs} ms:\n${await report()}`);
        await sleep(100);
      }
    },
    async keysByMaster() {
      const found = new Map<number, string[]>();
      for (const node of alive()) {
        const client = new Redis({ port: node.port, host: '127.0.0.1', maxRetriesPerRequest: 1, lazyConnect: true });
        client.on('error', () => undefined);
        try {
          await client.connect();
          if (((await client.call('ROLE')) as [string])[0] !== 'master') continue;
          const keys: string[] = [];
          let cursor = '0';
          do {
            const [next, batch] = await client.scan(cursor, 'COUNT', 1000);
            cursor = next;
            keys.push(...batch);
          } while (cursor !== '0');
          found.set(node.port, keys);
        } finally {
          client.disconnect();
        }
      }
      return found;
    },
    stop,
  };
}

/**
 * Ready when every node says the cluster is ok, every replica's link to its master is up (a replica
 * still in its first sync could not take over), and a cluster client can write. A cluster client
 * whose slots are not settled can wait forever, so each probe gets 2 s.
 */
async function waitForClusterReady(ports: number[]): Promise<void> {
  const deadline = Date.now() + 60_000;
  while (Date.now() < deadline) {
    const ready = await (async () => {
      for (const port of ports) {
        if (!String(await ask(port, 'CLUSTER', 'INFO')).includes('cluster_state:ok')) return false;
        const replication = String(await ask(port, 'INFO', 'replication'));
        if (replication.includes('role:slave') && !replication.includes('master_link_status:up')) return false;
      }
      const probe = new Cluster([{ host: '127.0.0.1', port: ports[0]! }], { lazyConnect: true, clusterRetryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await withTimeout(
          probe.connect().then(() => probe.set('{probe}:x', '1')),
          2_000,
          'the cluster did not answer the probe',
        );
        return true;
      } finally {
        probe.disconnect();
      }
    })().catch(() => false);
    if (ready) return;
    await sleep(200);
  }
  throw new Error('the Redis Cluster did not become ready');
}

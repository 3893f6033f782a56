// A Redis Cluster on loopback for the cluster test: 3 masters, each with a replica that takes over
// when its master dies.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Cluster } from 'ioredis';
import { freePort, startRedis, stopChild } from '../../src/local/services.ts';
import { withTimeout } from '../../src/shared/infra/timeout.ts';

export type RedisCluster = {
  url: string;
  /** SIGKILL to the master that holds `key`'s slot; returns its port. */
  killMasterOf: (key: string) => Promise<number>;
  /** The port of the master that holds `key`'s slot now, as the surviving nodes see it. */
  masterPortOf: (key: string) => number | undefined;
  stop: () => Promise<void>;
};

export async function startRedisCluster(): Promise<RedisCluster> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cfs-cluster-'));
  const nodes: Array<Awaited<ReturnType<typeof startRedis>>> = [];
  try {
    for (let i = 0; i < 6; i++) {
      const port = await freePort();
      nodes.push(
        await startRedis({
          port,
          extraArgs: [
            '--dir',
            dir,
            '--cluster-enabled',
            'yes',
            '--cluster-config-file',
            path.join(dir, `nodes-${port}.conf`),
            '--cluster-node-timeout',
            '2000',
          ],
        }),
      );
    }
    const created = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', '1', '--cluster-yes'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed:\n${created.stdout}${created.stderr}`);
    await waitForClusterOk(nodes[0]!.port);
  } catch (error) {
    for (const node of nodes) await node.stop();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const killed = new Set<number>();
  const cli = (...args: string[]) => {
    const alive = nodes.find((node) => !killed.has(node.port))!;
    return spawnSync('redis-cli', ['-p', String(alive.port), ...args], { encoding: 'utf8', timeout: 10_000 }).stdout;
  };
  const masterPortOf = (key: string) => {
    const slot = Number(cli('cluster', 'keyslot', key).trim());
    for (const line of cli('cluster', 'nodes').trim().split('\n')) {
      const [, address, flags, , , , , state, ...ranges] = line.split(' ');
      if (!flags!.includes('master') || flags!.includes('fail') || state !== 'connected') continue;
      const owns = ranges.some((range) => {
        const [from, to = from] = range.split('-').map(Number);
        return slot >= from! && slot <= to!;
      });
      if (owns) return Number(address!.split('@')[0]!.split(':')[1]);
    }
    return undefined;
  };
  return {
    url: nodes[0]!.url,
    masterPortOf,
    async killMasterOf(key) {
      const port = masterPortOf(key)!;
      killed.add(port);
      await stopChild(nodes.find((node) => node.port === port)!.child, 'SIGKILL');
      return port;
    },
    async stop() {
      for (const node of nodes) await node.stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function waitForClusterOk(port: number): Promise<void> {
  const deadline = Date.now() + 20_000;
  while (Date.now() < deadline) {
    const info = spawnSync('redis-cli', ['-p', String(port), 'cluster', 'info'], { encoding: 'utf8' }).stdout;
    if (info.includes('cluster_state:ok')) {
      // Every node must also agree on the slots before clients connect. A cluster client whose
      // slots are not settled can wait forever, so each probe gets 2 s.
      const probe = new Cluster([{ host: '127.0.0.1', port }], { lazyConnect: true, clusterRetryStrategy: () => null });
      try {
        await withTimeout(
          probe.connect().then(() => probe.set('{probe}:x', '1')),
          2_000,
          'the cluster did not answer the probe',
        );
        return;
      } catch {
        // not settled yet
      } finally {
        probe.disconnect();
      }
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new Error('the Redis Cluster did not become ready');
}

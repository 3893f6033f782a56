// A 3-node Redis Cluster on loopback (no replicas), for the cluster test.
import { spawnSync } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Cluster } from 'ioredis';
import { freePort, startRedis } from '../../src/local/services.ts';
import { withTimeout } from '../../src/shared/infra/timeout.ts';

export async function startRedisCluster(): Promise<{ url: string; stop: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cfs-cluster-'));
  const nodes: Array<Awaited<ReturnType<typeof startRedis>>> = [];
  try {
    for (let i = 0; i < 3; i++) {
      const port = await freePort();
      nodes.push(
        await startRedis({
          port,
          extraArgs: ['--cluster-enabled', 'yes', '--cluster-config-file', path.join(dir, `nodes-${port}.conf`), '--cluster-node-timeout', '2000'],
        }),
      );
    }
    const created = spawnSync(
      'redis-cli',
      ['--cluster', 'create', ...nodes.map((node) => `127.0.0.1:${node.port}`), '--cluster-replicas', '0', '--cluster-yes'],
      { encoding: 'utf8', timeout: 30_000 },
    );
    if (created.status !== 0) throw new Error(`redis-cli --cluster create failed:\n${created.stdout}${created.stderr}`);
    await waitForClusterOk(nodes[0]!.port);
  } catch (error) {
    for (const node of nodes) await node.stop();
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  return {
    url: nodes[0]!.url,
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

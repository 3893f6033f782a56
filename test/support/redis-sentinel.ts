// Redis with failover on loopback, for the Sentinel test: a primary, one replica and three
// sentinels. The replica reads the primary's stream through a relay of the test's own, which can
// hold that stream back: the replica then falls behind as a real one does, and a failover loses the
// writes it never got. Sentinel points a replica that reads another address than the primary's at
// the primary itself (`+fix-slave-config`) once failover-timeout has passed since it saw that
// setting: the hold first points the replica at the relay again, and the timeout outlasts a test.
import type { ChildProcess } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { createServer, connect, type Server, type Socket } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Redis } from 'ioredis';
import { ensureRedisServer, freePort, startRedis, stopChild } from '../../src/local/services.ts';
import { spawnTracked, waitForOutput } from '../../src/local/processes.ts';
import { eventually } from './harness.ts';
import { sleep } from './sleep.ts';

export const SENTINEL_MASTER = 'cfs';
/** Longer than a test runs before its kill; a failover that works takes a few seconds whatever it is. */
const FAILOVER_TIMEOUT_MS = 60_000;

export type SentinelSetup = {
  /** REDIS_SENTINELS for the processes. */
  sentinels: string;
  /** REDIS_URL for the processes (its host is not used with sentinels; the primary's, for the test). */
  url: string;
  primaryPort: number;
  replicaPort: number;
  /** Holds the primary's stream back from the replica (it falls behind), until the primary dies. */
  holdReplication: () => Promise<void>;
  /** SIGKILL to the primary. */
  killPrimary: () => Promise<void>;
  /** The port of the primary the sentinels name now. */
  currentPrimaryPort: () => Promise<number>;
  stop: () => Promise<void>;
};

/** Relays the replica's connection to the primary; `hold` keeps what the primary sends from the replica. */
function replicationRelay(primaryPort: number): { server: Server; hold: () => void; port: () => number } {
  let held = false;
  const server = createServer((replica: Socket) => {
    const primary = connect(primaryPort, '127.0.0.1');
    replica.pipe(primary);
    primary.on('data', (chunk: Buffer) => {
      if (!held) replica.write(chunk);
    });
    const close = () => {
      replica.destroy();
      primary.destroy();
    };
    for (const socket of [replica, primary]) socket.on('close', close).on('error', close);
  });
  return { server, hold: () => (held = true), port: () => (server.address() as { port: number }).port };
}

/** Points the replica at the relay, if Sentinel had pointed it at the primary, and waits until it reads through it. */
async function readThroughRelay(replicaPort: number, relayPort: number): Promise<void> {
  const client = new Redis({ port: replicaPort, host: '127.0.0.1', maxRetriesPerRequest: 1 });
  let pointed = false;
  try {
    await eventually(
      async () => {
        const info = await client.info('replication');
        if (Number(/^master_port:(\d+)/m.exec(info)?.[1]) === relayPort) return /^master_link_status:up/m.test(info) || undefined;
        if (!pointed) await client.call('REPLICAOF', '127.0.0.1', String(relayPort));
        pointed = true;
        return undefined;
      },
      30_000,
      'the replica reading through the relay',
    );
  } finally {
    client.disconnect();
  }
}

export async function startSentinelSetup(): Promise<SentinelSetup> {
  const dir = await mkdtemp(path.join(tmpdir(), 'cfs-sentinel-'));
  const binary = ensureRedisServer();
  const children: ChildProcess[] = [];
  // Their working directory the test's: a replica's full sync writes the primary's data to a file there.
  const primary = await startRedis({ extraArgs: ['--dir', dir] });
  const relay = replicationRelay(primary.port);
  await new Promise<void>((resolve) => relay.server.listen(0, '127.0.0.1', resolve));
  const replica = await startRedis({ extraArgs: ['--dir', dir, '--replicaof', '127.0.0.1', String(relay.port())] });
  const sentinelPorts: number[] = [];
  for (let n = 0; n < 3; n += 1) {
    const port = await freePort();
    sentinelPorts.push(port);
    // Sentinel rewrites its configuration file: each has a copy of its own.
    const file = path.join(dir, `sentinel-${port}.conf`);
    await writeFile(
      file,
      [
        `port ${port}`,
        'bind 127.0.0.1',
        `dir ${dir}`,
        `sentinel monitor ${SENTINEL_MASTER} 127.0.0.1 ${primary.port} 2`,
        `sentinel down-after-milliseconds ${SENTINEL_MASTER} 1000`,
        // Also how long Sentinel leaves the replica reading through the relay (above).
        `sentinel failover-timeout ${SENTINEL_MASTER} ${FAILOVER_TIMEOUT_MS}`,
        '',
      ].join('\n'),
    );
    // Tracked: stopped with this process even when a test fails before its cleanup.
    const child = spawnTracked('SIGTERM', binary, [file, '--sentinel'], { stdio: ['ignore', 'pipe', 'pipe'] });
    children.push(child);
    await waitForOutput(child, /\+monitor master/, 'redis-sentinel');
    child.stdout?.resume();
    child.stderr?.resume();
  }
  const ask = async <T>(command: (client: Redis) => Promise<T>): Promise<T> => {
    const client = new Redis({ port: sentinelPorts[0], host: '127.0.0.1', maxRetriesPerRequest: 1, lazyConnect: true });
    try {
      await client.connect();
      return await command(client);
    } finally {
      client.disconnect();
    }
  };
  const currentPrimaryPort = async () =>
    Number(((await ask((client) => client.call('SENTINEL', 'get-master-addr-by-name', SENTINEL_MASTER))) as [string, string])[1]);
  const stop = async () => {
    for (const child of children) await stopChild(child, 'SIGTERM', 5_000);
    relay.server.close();
    await replica.stop();
    await primary.stop();
    await rm(dir, { recursive: true, force: true });
  };
  try {
    // Ready once the sentinels know one another and the replica, and agree they could fail over.
    const deadline = Date.now() + 30_000;
    for (;;) {
      const quorum = await ask((client) => client.call('SENTINEL', 'ckquorum', SENTINEL_MASTER)).catch((error: unknown) => (error as Error).message);
      const replicas = (await ask((client) => client.call('SENTINEL', 'replicas', SENTINEL_MASTER))) as unknown[];
      if (String(quorum).includes('3 usable') && replicas.length === 1) break;
      if (Date.now() > deadline) throw new Error(`the sentinels did not get ready: ${String(quorum)}, ${replicas.length} replica(s)`);
      await sleep(200);
    }
  } catch (error) {
    await stop();
    throw error;
  }
  return {
    sentinels: sentinelPorts.map((port) => `127.0.0.1:${port}`).join(','),
    url: primary.url,
    primaryPort: primary.port,
    replicaPort: replica.port,
    holdReplication: async () => {
      await readThroughRelay(replica.port, relay.port());
      relay.hold();
    },
    killPrimary: () => stopChild(primary.child, 'SIGKILL'),
    currentPrimaryPort,
    stop,
  };
}

// The ports the local services and the tests listen on: free when chosen, and chosen where no
// outgoing connection or port-0 listener of another program can take them before they are bound.
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { FREE_PORT_FLOOR, freePort } from '../../src/local/processes.ts';

const ephemeralFloor = Number(readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0]);

const listen = (port: number) =>
  new Promise<Server>((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => resolve(server));
  });
const close = (server: Server) => new Promise<void>((resolve) => server.close(() => resolve()));

afterEach(() => vi.restoreAllMocks());

describe('a free port', () => {
  it('lies below the kernel’s ephemeral range, and can then be listened on', async () => {
    for (let draw = 0; draw < 20; draw++) {
      const port = await freePort();
      expect(port).toBeGreaterThanOrEqual(1024);
      expect(port).toBeLessThan(ephemeralFloor);
      await close(await listen(port));
    }
  });

  it('is never one that something already listens on', async () => {
    const taken = await listen(await freePort());
    const takenPort = (taken.address() as { port: number }).port;
    const other = await freePort();
    // The first draw lands on the taken port, the next one anywhere else.
    const span = ephemeralFloor - FREE_PORT_FLOOR;
    const draws = [(takenPort - FREE_PORT_FLOOR + 0.5) / span, (other - FREE_PORT_FLOOR + 0.5) / span];
    vi.spyOn(Math, 'random').mockImplementation(() => draws.shift() ?? 0.5);
    try {
      expect(await freePort()).toBe(other);
    } finally {
      await close(taken);
    }
  });
});

// At most `perIp` open connections from one address; the next one is closed at once. This runs
// before any request is parsed, so it counts the socket's remote address: behind a proxy that is
// the proxy's address, not the client's (TRUST_PROXY does not apply here; see SECURITY.md).
// `subject` groups addresses as the rate limiter does (IPv6 by its network prefix).
import type { Server } from 'node:http';
import type { Socket } from 'node:net';

/** `perIp` 0 turns the cap off. */
export function capConnectionsPerIp(server: Server, perIp: number, subject: (address: string) => string): void {
  if (perIp <= 0) return;
  const open = new Map<string, number>();
  server.on('connection', (socket: Socket) => {
    const address = subject(socket.remoteAddress ?? '');
    const count = open.get(address) ?? 0;
    if (count >= perIp) {
      socket.destroy();
      return;
    }
    open.set(address, count + 1);
    socket.once('close', () => {
      const left = (open.get(address) ?? 1) - 1;
      if (left > 0) open.set(address, left);
      else open.delete(address);
    });
  });
}

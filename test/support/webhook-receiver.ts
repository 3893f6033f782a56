// A webhook receiver for tests: an HTTP server on a loopback address that records each request and
// answers with the next scripted status (200 once the script runs out).
import { once } from 'node:events';
import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

export type Received = { headers: IncomingHttpHeaders; body: string; path: string };
export type Answer = { status: number; headers?: Record<string, string> };

export type Receiver = {
  url: string;
  received: Received[];
  /** Answers to give, in order, before the default 200. */
  script: Answer[];
  close: () => Promise<void>;
};

export async function startReceiver(host = '127.0.0.2', port = 0): Promise<Receiver> {
  const received: Received[] = [];
  const script: Answer[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8'), path: req.url ?? '' });
      const answer = script.shift() ?? { status: 200 };
      res.writeHead(answer.status, answer.headers).end(answer.status >= 400 ? 'receiver says no' : 'ok');
    });
  });
  server.listen(port, host);
  await once(server, 'listening');
  const address = server.address() as AddressInfo;
  return {
    url: `http://${host}:${address.port}/hook`,
    received,
    script,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

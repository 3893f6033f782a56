// A webhook receiver on loopback, in the benchmark's own process: it answers every POST 200 and
// keeps, for each, the Standard Webhooks id (`webhook-id`, one per delivery: the same id twice is
// a duplicate), the submission the event names and when it arrived.
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export type WebhookPost = { webhookId: string; submission: string; at: number };

export type WebhookReceiver = {
  url: string;
  /** Every POST since the last reset, in arrival order. */
  posts: () => WebhookPost[];
  reset: () => void;
  close: () => Promise<void>;
};

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  let posts: WebhookPost[] = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const at = performance.timeOrigin + performance.now();
      let submission = '';
      try {
        const id = (JSON.parse(Buffer.concat(chunks).toString('utf8')) as { data?: { id?: unknown } }).data?.id;
        submission = typeof id === 'string' ? id : '';
      } catch {
        // Counted with no submission: lost for the figures, as a receiver could not read it either.
      }
      posts.push({ webhookId: String(request.headers['webhook-id'] ?? ''), submission, at });
      response.writeHead(200).end();
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  return {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`,
    posts: () => posts,
    reset: () => {
      posts = [];
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

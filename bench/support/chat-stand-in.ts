// A Slack incoming webhook's stand-in on loopback, in the benchmark's own process: it answers a
// POST to its secret path 200 "ok", as Slack does, and counts each message that is JSON with the
// `text` and `blocks` a Slack message carries and a link to one submission in the console, so that
// a drain's figure counts posts that were actually made. Anything else is answered 400 and counted
// as refused.
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export type ChatStandIn = {
  /** What an owner would paste: the incoming-webhook URL, its secret in the path. */
  url: string;
  /** Messages accepted since the last reset, and the submissions they named (a repeat names one twice). */
  posts: () => number;
  submissions: () => number;
  refused: () => number;
  /** When the last message was accepted: epoch ms with a fraction, as the SMTP sink's arrivals. */
  lastAt: () => number;
  /** Each message accepted since the last reset: the submission it named, and when. */
  arrivals: () => Array<{ submission: string; at: number }>;
  reset: () => void;
  /** Resolves when `count` messages have been accepted, or at the deadline (epoch ms) with what there is. */
  waitFor: (count: number, deadline: number) => Promise<boolean>;
  close: () => Promise<void>;
};

const LINK = /\/owner\/submissions\/([0-9a-f-]{36})/;

export async function startChatStandIn(): Promise<ChatStandIn> {
  const path = `/services/T0BENCH/B0BENCH/${randomBytes(18).toString('base64url')}`;
  let posts = 0;
  let refused = 0;
  let lastAt = 0;
  let named = new Set<string>();
  let arrivals: Array<{ submission: string; at: number }> = [];
  const server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on('data', (chunk: Buffer) => chunks.push(chunk));
    request.on('end', () => {
      const raw = Buffer.concat(chunks).toString('utf8');
      const submission = request.method === 'POST' && request.url === path ? slackSubmission(raw) : undefined;
      if (submission === undefined) {
        refused += 1;
        response.writeHead(400, { 'content-type': 'text/plain' }).end('invalid_payload');
        return;
      }
      posts += 1;
      lastAt = performance.timeOrigin + performance.now();
      named.add(submission);
      arrivals.push({ submission, at: lastAt });
      response.writeHead(200, { 'content-type': 'text/plain' }).end('ok');
    });
  });
  server.listen(0, '127.0.0.1');
  await once(server, 'listening');
  const standIn: ChatStandIn = {
    url: `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`,
    posts: () => posts,
    submissions: () => named.size,
    refused: () => refused,
    lastAt: () => lastAt,
    arrivals: () => arrivals,
    reset: () => {
      arrivals = [];
      posts = 0;
      refused = 0;
      lastAt = 0;
      named = new Set();
    },
    async waitFor(count, deadline) {
      while (posts < count) {
        if (Date.now() > deadline) return false;
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return true;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
  return standIn;
}

/** The submission a Slack message links to; undefined when the body is not such a message. */
function slackSubmission(raw: string): string | undefined {
  let body: unknown;
  try {
    body = JSON.parse(raw);
  } catch {
    return undefined;
  }
  if (typeof body !== 'object' || body === null) return undefined;
  const { text, blocks } = body as { text?: unknown; blocks?: unknown };
  if (typeof text !== 'string' || text === '' || !Array.isArray(blocks) || blocks.length === 0) return undefined;
  return LINK.exec(raw)?.[1];
}

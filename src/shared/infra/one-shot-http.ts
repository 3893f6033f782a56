// One HTTP/1.0 POST on a connection of its own, for rspamd. rspamd closes every connection after
// its answer, so nothing is pooled, and its answers are small. Node's http client, fetch and
// undici each cost a worker more CPU per spam check than this bare socket, and a check is made for
// every email (docs/benchmarks.md).
import net from 'node:net';
import tls from 'node:tls';

export type OneShotAnswer = { status: number; body: string };

/** Largest answer read (a verdict with its symbols is a few KB). */
const MAX_ANSWER_BYTES = 1024 * 1024;
const HEAD_END = Buffer.from('\r\n\r\n');

/**
 * POSTs to `path` of `server`: an http(s) URL, or `unix:/absolute/path` for a server on a Unix
 * socket of this host. Rejects when the server is unreachable, slower than `timeoutMs` in all,
 * answers too much or not HTTP.
 */
export function postOnce(server: URL, path: string, headers: Record<string, string>, body: Buffer, timeoutMs: number): Promise<OneShotAnswer> {
  return new Promise((resolve, reject) => {
    const head =
      server.protocol === 'unix:'
        ? requestHead(path, 'localhost', headers, body.length)
        : requestHead(pathAndQuery(new URL(path, server)), server.host, headers, body.length);
    const socket = connect(server);
    const chunks: Buffer[] = [];
    let size = 0;
    let settled = false;
    const settle = (outcome: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      outcome();
    };
    const timer = setTimeout(() => settle(() => reject(new Error(`no answer within ${timeoutMs} ms`))), timeoutMs);
    // Whole once the server closes, or once Content-Length bytes followed the head (rspamd's
    // controller writes more after a `Connection: close` answer).
    const finish = (closed: boolean) => {
      // Settled already: the socket's end and close after an answer, or more bytes after it.
      if (settled) return;
      const all = Buffer.concat(chunks, size);
      const headEnd = all.indexOf(HEAD_END);
      if (headEnd < 0) {
        if (closed) settle(() => reject(new Error('the answer was not HTTP')));
        return;
      }
      const headText = all.subarray(0, headEnd).toString('latin1');
      const status = /^HTTP\/1\.[01] (\d{3})\b/.exec(headText);
      if (!status) return settle(() => reject(new Error('the answer was not HTTP')));
      const declared = /\r\ncontent-length:[ \t]*(\d+)/i.exec(headText);
      const bodyStart = headEnd + HEAD_END.length;
      const code = Number(status[1]);
      const length = code === 204 ? 0 : declared ? Number(declared[1]) : undefined;
      if (length !== undefined && all.length - bodyStart >= length) {
        settle(() => resolve({ status: code, body: all.subarray(bodyStart, bodyStart + length).toString('utf8') }));
      } else if (closed) {
        if (length !== undefined) settle(() => reject(new Error('the connection closed mid-answer')));
        else settle(() => resolve({ status: code, body: all.subarray(bodyStart).toString('utf8') }));
      }
    };
    socket.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MAX_ANSWER_BYTES) return settle(() => reject(new Error('the answer was too large')));
      chunks.push(chunk);
      finish(false);
    });
    socket.on('end', () => finish(true));
    socket.on('close', () => finish(true));
    socket.on('error', (error) => settle(() => reject(error)));
    // One write (one system call once connected); not ended after it: rspamd takes a half-closed
    // connection for a client that left.
    socket.write(Buffer.concat([Buffer.from(head, 'utf8'), body]));
  });
}

/** The socket path of a `unix:` URL: `unix:/run/rspamd.sock` and `unix:///run/rspamd.sock` alike. */
function unixSocketPath(server: URL): string {
  return decodeURIComponent(server.pathname);
}

/** The `unix:` URL of a socket's path, each part escaped, so that a `%`, `?` or `#` in it stays part of the path. */
export function unixSocketUrl(socketPath: string): string {
  return `unix:${socketPath.split('/').map(encodeURIComponent).join('/')}`;
}

function connect(server: URL): net.Socket {
  if (server.protocol === 'unix:') return net.connect({ path: unixSocketPath(server) });
  const secure = server.protocol === 'https:';
  const port = Number(server.port) || (secure ? 443 : 80);
  const host = server.hostname.replace(/^\[|\]$/g, '');
  return secure ? tls.connect({ host, port, servername: net.isIP(host) ? undefined : host }) : net.connect({ host, port });
}

const pathAndQuery = (url: URL) => `${url.pathname}${url.search}`;

/** The head of a POST; throws for a header whose name or value would break the request into more lines. */
export function requestHead(path: string, host: string, headers: Record<string, string>, contentLength: number): string {
  const lines = [`POST ${path} HTTP/1.0`, `Host: ${host}`];
  for (const [name, value] of Object.entries({ ...headers, 'Content-Length': String(contentLength) })) {
    // A line break would start another header (or the body) of the caller's choosing.
    if (/[\r\n\0]/.test(name + value) || !/^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/.test(name)) throw new Error(`header ${JSON.stringify(name)} cannot be sent`);
    lines.push(`${name}: ${value}`);
  }
  return `${lines.join('\r\n')}\r\n\r\n`;
}

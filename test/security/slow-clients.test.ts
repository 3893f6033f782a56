// Slow clients on loopback, through raw sockets: a client that opens a body and sends nothing, or
// trickles it, holds no upload slot for long and is cut off; a refusal given before the body was
// read closes the connection; the header timeout and the per-IP connection cap hold.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { eventually, listObjectKeys, startHarness, type Harness } from '../support/harness.ts';
import { request } from '../support/http.ts';
import { multipartBody, postRaw, type Part } from '../support/multipart.ts';
import { sleep } from '../support/sleep.ts';

/** Default body timeout (20 s, longer than any test here waits) and a single upload slot. */
let slots: Harness;
/** Short timeouts: a stalled body is cut after 1.5 s, headers after 1 s; 4 connections per IP. */
let strict: Harness;
/** One request per minute per IP; a request must arrive within 2 s, an idle connection closes after 0.5 s. */
let limited: Harness;
let slotsKey: string;
let strictKey: string;

beforeAll(async () => {
  [slots, strict, limited] = await Promise.all([
    startHarness({ worker: false, env: { UPLOAD_CONCURRENCY: '1', ADMIN_TOKEN: METRICS_TOKEN } }),
    startHarness({
      worker: false,
      env: {
        UPLOAD_CONCURRENCY: '1',
        BODY_IDLE_TIMEOUT_MS: '1500',
        BODY_MIN_BYTES_PER_SECOND: '100',
        HTTP_HEADERS_TIMEOUT_MS: '1000',
        CONNECTIONS_PER_IP: '4',
      },
    }),
    startHarness({
      worker: false,
      env: {
        RATE_LIMIT_MAX: '1',
        RATE_LIMIT_WINDOW_MS: '60000',
        HTTP_HEADERS_TIMEOUT_MS: '1000',
        HTTP_REQUEST_TIMEOUT_MS: '2000',
        HTTP_KEEP_ALIVE_TIMEOUT_MS: '500',
      },
    }),
  ]);
  slotsKey = (await slots.createKey()).key;
  strictKey = (await strict.createKey()).key;
});
afterAll(async () => {
  for (const client of clients) client.socket.destroy();
  await Promise.all([slots?.stop(), strict?.stop(), limited?.stop()]);
});

type RawClient = {
  socket: net.Socket;
  /** Resolves when the server closes (or resets) the connection. */
  closed: Promise<void>;
  received: () => string;
  /** Milliseconds from the last write of this client to the close, once closed. */
  quietBeforeClose: () => Promise<number>;
};
const clients: RawClient[] = [];

/**
 * The close came from the named timeout: not before it (an error or another limit would close at
 * once), and well before the suite's own time limit. The upper bound leaves room for the server's
 * periodic check of timeouts and a busy machine.
 */
async function expectClosedByTimeout(client: RawClient, timeoutMs: number): Promise<void> {
  const quiet = await client.quietBeforeClose();
  expect(quiet).toBeGreaterThanOrEqual(timeoutMs - 100);
  expect(quiet).toBeLessThan(timeoutMs + 5_000);
}

/** Opens a raw connection from `localAddress` and writes `data` (if any). */
async function connect(h: Harness, data?: string | Buffer, localAddress = '127.0.0.1'): Promise<RawClient> {
  const { port } = new URL(h.url);
  const socket = net.connect({ host: '127.0.0.1', port: Number(port), localAddress });
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  let closedAt = 0;
  let lastWriteAt = performance.now();
  const write: (chunk: string | Buffer) => boolean = socket.write.bind(socket);
  socket.write = (chunk: string | Buffer) => {
    lastWriteAt = performance.now();
    return write(chunk);
  };
  const closed = new Promise<void>((resolve) =>
    socket.once('close', () => {
      closedAt = performance.now();
      resolve();
    }),
  );
  socket.on('error', () => undefined); // a reset shows as 'close'
  await new Promise<void>((resolve, reject) => {
    socket.once('connect', resolve);
    socket.once('error', reject);
  });
  if (data !== undefined) socket.write(data);
  const client = {
    socket,
    closed,
    received: () => Buffer.concat(chunks).toString('latin1'),
    quietBeforeClose: async () => {
      await closed;
      return closedAt - lastWriteAt;
    },
  };
  clients.push(client);
  return client;
}

/**
 * File bytes to send so that the parser sees the file begin: the API holds back the last bytes
 * of a multipart body (up to the boundary's length) while it looks for the closing delimiter.
 */
const FILE_BYTES_SEEN = 200;
/**
 * File bytes past the first 256 KB, which are read under small slots of their own: an upload
 * stalled here holds one of the UPLOAD_CONCURRENCY slots (with a file of `BIG_FILE` bytes).
 */
const PAST_SMALL = 300 * 1024;
const BIG_FILE = 400 * 1024;

/** The head of a POST whose body is announced at `length` bytes. */
const postHead = (path: string, contentType: string, length: number) =>
  `POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: ${contentType}\r\nContent-Length: ${length}\r\n\r\n`;

const fields = (key: string, token: string): Part[] => [
  { name: 'access_key', value: key },
  { name: 'email', value: 'visitor@example.org' },
  { name: 'message', value: `slow client ${token}` },
];

/**
 * A multipart submission with one file, cut after the file part's headers and `fileBytes` of its
 * data: the head plus the bytes sent, and the bytes not sent yet.
 */
function stalledUpload(key: string, token: string, fileBytes: number, fileSize = 100_000) {
  const data = Buffer.alloc(fileSize, 'x');
  const { body, contentType } = multipartBody([...fields(key, token), { name: 'file', filename: 'slow.bin', data }]);
  const fileStart = body.indexOf(data);
  const cut = fileStart + fileBytes;
  return {
    sent: Buffer.concat([Buffer.from(postHead('/api/contact-api/', contentType, body.length)), body.subarray(0, cut)]),
    rest: body.subarray(cut),
  };
}

async function normalUpload(h: Harness, key: string, token: string, files: Part[]) {
  const { body, contentType } = multipartBody([...fields(key, token), ...files]);
  return postRaw(`${h.url}/api/contact-api/`, body, { 'content-type': contentType }, { timeoutMs: 10_000 });
}

const METRICS_TOKEN = 'slow-clients-metrics-token';
const metricsOf = async (h: Harness): Promise<string> => (await request(`${h.url}/metrics`, { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })).text;

const rowsWith = async (h: Harness, token: string) =>
  ((await h.sql('select count(*)::int as n from submissions where message like $1', [`%${token}`])) as [{ n: number }])[0].n;

describe('upload slots (UPLOAD_CONCURRENCY=1)', { timeout: 20_000 }, () => {
  it('are not taken by an empty file input while another upload holds the only slot', async () => {
    // This client's file has passed 256 KB, so it holds the slot (the body timeout is 20 s here).
    const holder = await connect(slots, stalledUpload(slotsKey, 'holder', PAST_SMALL, BIG_FILE).sent);
    await sleep(300);

    const response = await normalUpload(slots, slotsKey, 'empty-input', [{ name: 'file', filename: '', data: Buffer.alloc(0) }]);
    expect(response.status, response.text).toBe(200);
    expect(response.json.attachments).toBe(0);
    holder.socket.destroy();
  });

  it('are not needed by a file that ends within its first 256 KB: it is stored while a stalled upload holds the only slot', async () => {
    const holder = await connect(slots, stalledUpload(slotsKey, 'big-holder', PAST_SMALL, BIG_FILE).sent);
    await sleep(300);

    const response = await normalUpload(slots, slotsKey, 'small-file', [{ name: 'file', filename: 'small.bin', data: Buffer.alloc(200 * 1024, 's') }]);
    expect(response.status, response.text).toBe(200);
    expect(response.json.attachments).toBe(1);
    holder.socket.destroy();
  });

  it('bound the files in their first 256 KB to 32 at once: the 33rd waits until one of them goes', async () => {
    const holders = await Promise.all(Array.from({ length: 32 }, (_, i) => connect(slots, stalledUpload(slotsKey, `small-holder-${i}`, FILE_BYTES_SEEN).sent)));
    await sleep(500);
    let answered = false;
    const waiting = normalUpload(slots, slotsKey, 'thirty-third', [{ name: 'file', filename: 'small.bin', data: Buffer.from('hi') }]).then((response) => {
      answered = true;
      return response;
    });
    // It waits for a slot (the gauge says so) and is not answered while it does.
    await eventually(
      async () => (/^cfs_uploads_waiting\{slots="small"\} 1$/m.test(await metricsOf(slots)) ? true : undefined),
      10_000,
      'the 33rd upload waiting',
    );
    expect(answered).toBe(false);
    holders[0]!.socket.destroy();
    const response = await waiting;
    expect(response.status, response.text).toBe(200);
    for (const holder of holders) holder.socket.destroy();
  });
});

describe('a body that stops coming (BODY_IDLE_TIMEOUT_MS=1500)', { timeout: 20_000 }, () => {
  it('is cut off after a file has begun: connection closed, objects deleted, no row, slot free again', async () => {
    const token = `stall-${Date.now()}`;
    const slow = await connect(strict, stalledUpload(strictKey, token, FILE_BYTES_SEEN).sent);
    await expectClosedByTimeout(slow, 1_500);

    await eventually(async () => ((await listObjectKeys(strict.storage)).length === 0 ? true : undefined), 10_000, 'the stalled upload’s objects to go');
    expect(await rowsWith(strict, token)).toBe(0);
    const response = await normalUpload(strict, strictKey, 'after-stall', [{ name: 'file', filename: 'b.txt', data: Buffer.from('hi') }]);
    expect(response.status, response.text).toBe(200);
  });

  it('is cut off when it trickles one byte at a time, and frees the upload slot', async () => {
    const token = `trickle-${Date.now()}`;
    const { sent, rest } = stalledUpload(strictKey, token, PAST_SMALL, BIG_FILE);
    const slow = await connect(strict, sent);
    let isClosed = false;
    void slow.closed.then(() => (isClosed = true));
    // 1 byte per 100 ms (10 B/s, below the 100 B/s asked for), at most 600 bytes: bounded.
    const trickle = (async () => {
      for (let i = 0; i < 600 && !isClosed; i += 1) {
        slow.socket.write(rest.subarray(i, i + 1));
        await sleep(100);
      }
    })();

    // Waits for the only slot (its file passes 256 KB), which the trickling client holds until it is cut off.
    const response = await normalUpload(strict, strictKey, 'after-trickle', [{ name: 'file', filename: 'c.txt', data: Buffer.alloc(PAST_SMALL, 'c') }]);
    expect(response.status, response.text).toBe(200);
    await slow.closed;
    await trickle;
    expect(await rowsWith(strict, token)).toBe(0);
  });

  it('is cut off for a JSON body that sends nothing after the headers', async () => {
    const slow = await connect(strict, postHead('/api/contact-api/', 'application/json', 500));
    await expectClosedByTimeout(slow, 1_500);
    expect(slow.received()).toBe('');
  });

  it('does not count time the API spends waiting for an upload slot against the client', async () => {
    // A holder keeps the only slot for 4 s, sending steadily; the second upload waits behind it
    // for more than two 1.5 s body timeouts, its body unread (5 MB: more than the socket buffers
    // hold), and must still be accepted.
    const { sent, rest } = stalledUpload(strictKey, `steady-${Date.now()}`, PAST_SMALL, BIG_FILE);
    const holder = await connect(strict, sent);
    const steady = (async () => {
      for (let i = 0; i < 40; i += 1) {
        holder.socket.write(rest.subarray(i * 1000, (i + 1) * 1000));
        await sleep(100);
      }
      holder.socket.write(rest.subarray(40_000));
    })();
    await sleep(200);
    const response = await normalUpload(strict, strictKey, 'behind-holder', [{ name: 'file', filename: 'd.txt', data: Buffer.alloc(5_000_000, 'd') }]);
    expect(response.status, response.text).toBe(200);
    await steady;
    holder.socket.destroy();
  });
});

describe('server timeouts and connection cap', { timeout: 20_000 }, () => {
  it('closes a connection whose headers do not complete (HTTP_HEADERS_TIMEOUT_MS=1000)', async () => {
    const slow = await connect(strict, 'POST /api/contact-api/ HTTP/1.1\r\nHost: localhost\r\n');
    await expectClosedByTimeout(slow, 1_000);
  });

  it('closes a request still arriving after HTTP_REQUEST_TIMEOUT_MS=2000, however steadily it comes', async () => {
    const opened = performance.now();
    const slow = await connect(limited, postHead('/api/contact-api/', 'application/json', 100_000), '127.0.0.24');
    let isClosed = false;
    void slow.closed.then(() => (isClosed = true));
    // 1 KB per 100 ms, for at most 10 s: fast enough for the body timeout, too long for the request timeout.
    for (let i = 0; i < 100 && !isClosed; i += 1) {
      slow.socket.write(Buffer.alloc(1000, ' '));
      await sleep(100);
    }
    await slow.closed;
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408/);
    // Cut by the request timeout while it still wrote: not before it, and not by the 10 s the writes last.
    const lasted = performance.now() - opened;
    expect(lasted).toBeGreaterThanOrEqual(1_900);
    expect(lasted).toBeLessThan(7_000);
  });

  it('closes an idle keep-alive connection after HTTP_KEEP_ALIVE_TIMEOUT_MS=500', async () => {
    const client = await connect(limited, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n', '127.0.0.25');
    await expectClosedByTimeout(client, 500);
    expect(client.received()).toMatch(/^HTTP\/1\.1 200/);
  });

  it('accepts at most CONNECTIONS_PER_IP connections from one address, and more from another', async () => {
    const open = [];
    for (let i = 0; i < 4; i += 1) {
      const client = await connect(strict, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n', '127.0.0.9');
      await eventually(async () => (client.received().includes('\r\n\r\n') ? true : undefined), 5_000, 'a health answer');
      expect(client.received()).toMatch(/^HTTP\/1\.1 200/);
      open.push(client);
    }
    const fifth = await connect(strict, 'GET /healthz HTTP/1.1\r\nHost: localhost\r\n\r\n', '127.0.0.9');
    await fifth.closed;
    expect(fifth.received()).toBe('');

    // Another address is not affected; a freed connection can be used again.
    expect((await request(`${strict.url}/healthz`, { localAddress: '127.0.0.10' })).status).toBe(200);
    open[0]!.socket.destroy();
    // The server learns of the close a moment later: retry until it has.
    const again = await eventually(
      () => request(`${strict.url}/healthz`, { localAddress: '127.0.0.9', headers: { connection: 'close' } }).catch(() => undefined),
      5_000,
      'a connection from 127.0.0.9 to be accepted again',
    );
    expect(again.status).toBe(200);
    for (const client of open) client.socket.destroy();
  });
});

/** Spends the limited harness's one request per window from `address` (refused as empty, but counted). */
async function spendRateLimit(address: string): Promise<void> {
  const spent = await request(`${limited.url}/api/contact-api/`, {
    method: 'POST',
    localAddress: address,
    headers: { 'content-type': 'application/json', connection: 'close' },
    body: '{}',
  });
  expect(spent.status).toBe(400);
}

// A JSON or urlencoded body of at most 16 KiB is read before the rate limit's verdict (its ALTCHA
// answer's mark is set with the limit): past the limit, the client still waits for its 429.
describe('a small body from a client over the rate limit', { timeout: 20_000 }, () => {
  it('is answered 429 once read', async () => {
    const address = '127.0.0.26';
    await spendRateLimit(address);
    const body = JSON.stringify({ access_key: 'k', email: 'a@example.org', message: 'x'.repeat(900) });
    const client = await connect(limited, `${postHead('/api/contact-api/', 'application/json', Buffer.byteLength(body))}${body}`, address);
    await eventually(async () => (client.received().includes('\r\n\r\n') ? true : undefined), 5_000, 'an answer');
    expect(client.received()).toMatch(/^HTTP\/1\.1 429/);
  });

  it('is read no longer than HTTP_REQUEST_TIMEOUT_MS=2000 when it stops coming', async () => {
    const address = '127.0.0.27';
    await spendRateLimit(address);
    // Announces 1,000 bytes, sends 10 and stops.
    const slow = await connect(limited, `${postHead('/api/contact-api/', 'application/json', 1000)}{"email":"`, address);
    await expectClosedByTimeout(slow, 2_000);
    expect(slow.received()).toMatch(/^HTTP\/1\.1 408/);
  });
});

describe('a refusal with the body unread closes the connection', { timeout: 20_000 }, () => {
  it('429 from the rate limiter', async () => {
    const address = '127.0.0.21';
    await spendRateLimit(address);
    // The second request announces 100 KB, sends 10 bytes and keeps the connection open.
    const slow = await connect(limited, `${postHead('/api/contact-api/', 'application/json', 100_000)}{"email":"`, address);
    await slow.closed;
    expect(slow.received()).toMatch(/^HTTP\/1\.1 429/);
    expect(slow.received()).toMatch(/\r\nConnection: close\r\n/i);
  });

  it('413 from POST / for a body announced over 1 MB', async () => {
    const slow = await connect(limited, `${postHead('/', 'application/json', 2 * 1024 * 1024)}{"email":"`, '127.0.0.22');
    await slow.closed;
    expect(slow.received()).toMatch(/^HTTP\/1\.1 413/);
    expect(slow.received()).toMatch(/\r\nConnection: close\r\n/i);
  });

  it('415 from POST /api/contact-api/', async () => {
    const slow = await connect(limited, `${postHead('/api/contact-api/', 'text/plain', 100_000)}hello`, '127.0.0.23');
    await slow.closed;
    expect(slow.received()).toMatch(/^HTTP\/1\.1 415/);
    expect(slow.received()).toMatch(/\r\nConnection: close\r\n/i);
  });
});

// A request body the client breaks (a malformed chunked encoding, a connection closed mid-body, on
// a fresh or a kept-alive connection) is the client's error: the API counts it as a 400 and logs
// it below error level, so that nobody outside can make the "API errors" alert fire at will.
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLogger } from '../../src/shared/infra/log.ts';
import { eventually, startHarness, type Harness } from '../support/harness.ts';
import { CONTACT_API, submitJson } from '../support/client.ts';
import { multipartBody } from '../support/multipart.ts';
import { sleep } from '../support/sleep.ts';

const TOKEN = 'broken-bodies-admin-token-0123';
const lines: string[] = [];
let h: Harness;
let key: string;
beforeAll(async () => {
  const log = createLogger('api', 'debug', { write: (line: string) => void lines.push(line) });
  h = await startHarness({ env: { ADMIN_TOKEN: TOKEN }, worker: false, log });
  key = (await h.createKey()).key;
});
afterAll(() => h?.stop());

type Entry = { level: number; msg: string; method?: string; path?: string; status?: number };
const entries = (): Entry[] => lines.map((line) => JSON.parse(line) as Entry);
const submissionLines = () => entries().filter((entry) => entry.msg === 'request' && entry.method === 'POST' && entry.path === CONTACT_API);
/** pino's level for error (and 60 for fatal). */
const ERROR_LEVEL = 50;

/** The API's request counts for the contact route by status, and its submissions refused as internal errors. */
async function counts(): Promise<{ byStatus: Map<string, number>; internal: number }> {
  const text = await (await fetch(`${h.url}/metrics`, { headers: { authorization: `Bearer ${TOKEN}` } })).text();
  const byStatus = new Map<string, number>();
  const pattern = /cfs_http_request_duration_seconds_count\{method="POST",route="\/api\/contact-api\/",status="(\d+)"\} (\d+)/g;
  for (const [, status, count] of text.matchAll(pattern)) byStatus.set(status!, Number(count));
  const internal = Number(/cfs_submissions_rejected_total\{reason="internal"\} (\d+)/.exec(text)?.[1] ?? 0);
  return { byStatus, internal };
}
const serverErrors = (byStatus: Map<string, number>) => [...byStatus].filter(([status]) => status.startsWith('5')).reduce((sum, [, count]) => sum + count, 0);

/**
 * Writes `chunks` on one raw connection, `pauseMs` between them (0: in one write); then closes the
 * connection (`close: true`) or waits for the server to close it. Resolves with what the server sent.
 * `answeredFirst`: the second chunk waits until the server has answered the first.
 */
async function raw(chunks: Array<string | Buffer>, options: { close?: boolean; pauseMs?: number; answeredFirst?: boolean } = {}): Promise<string> {
  const { pauseMs = 100 } = options;
  const { port } = new URL(h.url);
  const socket = net.connect({ host: '127.0.0.1', port: Number(port) });
  const received: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => received.push(chunk));
  socket.on('error', () => undefined); // a reset shows as 'close'
  const closed = new Promise<void>((resolve) => socket.once('close', () => resolve()));
  await new Promise<void>((resolve) => socket.once('connect', resolve));
  if (pauseMs === 0) socket.write(Buffer.concat(chunks.map((chunk) => Buffer.from(chunk))));
  else {
    for (const [index, chunk] of chunks.entries()) {
      const answered = new Promise((resolve) => socket.once('data', resolve));
      socket.write(chunk);
      await sleep(pauseMs); // pacing on purpose: the body arrives in pieces, as from a slow client
      if (index === 0 && options.answeredFirst) await Promise.race([answered, closed]);
    }
  }
  if (options.close) socket.destroy();
  // The answer is read until the server closes; a server that keeps it open is cut at 5 s.
  await Promise.race([closed, sleep(5_000)]);
  socket.destroy();
  return Buffer.concat(received).toString('latin1');
}

const head = (contentType: string, framing: string) =>
  `POST ${CONTACT_API} HTTP/1.1\r\nHost: 127.0.0.1\r\nAccept: application/json\r\nContent-Type: ${contentType}\r\n${framing}\r\n`;
const json = JSON.stringify({ access_key: '00000000-0000-4000-8000-000000000000', email: 'a@example.org', message: 'hello' });
const form = () =>
  multipartBody([
    { name: 'email', value: 'a@example.org' },
    { name: 'message', value: 'hello' },
  ]);

/**
 * Sends a broken request (after `requests - 1` others on its connection) and checks what the
 * operator sees: 4xx request lines, the broken one a 400; no 5xx counted; no line at error level.
 */
async function expectClientError(send: () => Promise<string>, requests = 1): Promise<string> {
  const before = await counts();
  const requestsBefore = submissionLines().length;
  const linesBefore = lines.length;
  const answer = await send();
  const logged = await eventually(
    async () => {
      const added = submissionLines().slice(requestsBefore);
      return added.length >= requests ? added : undefined;
    },
    10_000,
    'the request lines',
  );
  const statuses = logged.map((line) => line.status ?? 0);
  expect(statuses).toContain(400);
  expect(statuses.filter((status) => status < 400 || status >= 500)).toEqual([]);
  const after = await counts();
  expect(serverErrors(after.byStatus)).toBe(serverErrors(before.byStatus));
  expect(after.byStatus.get('400') ?? 0).toBeGreaterThan(before.byStatus.get('400') ?? 0);
  expect(after.internal).toBe(before.internal);
  expect(
    entries()
      .slice(linesBefore)
      .filter((entry) => entry.level >= ERROR_LEVEL),
  ).toEqual([]);
  return answer;
}

// Each broken request goes twice: written in pieces (the API is reading the body when it breaks)
// and in one write (it breaks before the API has started to read).
const pacings = [100, 0];

describe('a request body broken by its client', () => {
  it('with a malformed chunk size in a JSON body is a 400, not a server error', async () => {
    const broken = [head('application/json', 'Transfer-Encoding: chunked\r\n'), `5\r\n${json.slice(0, 5)}\r\n`, 'zz\r\n'];
    for (const pauseMs of pacings) expect(await expectClientError(() => raw(broken, { pauseMs }))).toMatch(/^HTTP\/1\.1 400 /);
  });

  it('with a malformed chunk size in a multipart body is a 400, not a server error', async () => {
    const { body, contentType } = form();
    const part = body.subarray(0, 40);
    const broken = [
      head(contentType, 'Transfer-Encoding: chunked\r\n'),
      Buffer.concat([Buffer.from(`${part.length.toString(16)}\r\n`), part, Buffer.from('\r\n')]),
      'zz\r\n',
    ];
    for (const pauseMs of pacings) expect(await expectClientError(() => raw(broken, { pauseMs }))).toMatch(/^HTTP\/1\.1 400 /);
  });

  it('with a malformed chunk on a kept-alive connection, after a good request, is a 400', async () => {
    const good = `${head('application/json', `Content-Length: ${Buffer.byteLength(json)}\r\n`)}${json}`;
    const broken = [good, head('application/json', 'Transfer-Encoding: chunked\r\n'), '3\r\n{"a\r\n', 'zz\r\n'];
    // Written after the first request's answer (its key is unknown), the broken one gets Node's 400 on
    // the same connection; in one write, the broken encoding closes the connection before any answer.
    expect(await expectClientError(() => raw(broken, { answeredFirst: true }), 2)).toMatch(/^HTTP\/1\.1 403 [\s\S]*HTTP\/1\.1 400 /);
    expect(await expectClientError(() => raw(broken, { pauseMs: 0 }), 2)).toMatch(/^HTTP\/1\.1 400 /);
  });

  it('cut off by the client closing the connection mid-body is a 400, not a server error', async () => {
    const { body, contentType } = form();
    const cutOff = [
      [head('application/json', 'Content-Length: 1000\r\n'), json.slice(0, 20)],
      [head(contentType, `Content-Length: ${body.length + 1000}\r\n`), body.subarray(0, 60)],
      [head(contentType, 'Transfer-Encoding: chunked\r\n'), `3c\r\n${body.subarray(0, 60).toString('latin1')}\r\n`],
    ];
    for (const pauseMs of pacings) for (const chunks of cutOff) await expectClientError(() => raw(chunks, { pauseMs, close: true }));
  });

  it('leaves ordinary bad requests and submissions as they were', async () => {
    const bad = await submitJson(h, '{"access_key": ');
    expect(bad.status).toBe(400);
    expect(bad.json.message).toBe('Malformed request body: not valid JSON.');
    const ok = await submitJson(h, { access_key: key, email: 'a@example.org', message: 'still works' });
    expect(ok.status).toBe(200);
    expect(ok.json.success).toBe(true);
  });
});

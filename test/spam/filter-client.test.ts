// The spam filter's client against servers that misbehave on a loopback socket: every odd answer
// is an error (the worker then sends the email unchecked), never a verdict, a hang or a crash.
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { RSPAMD_CONFIG_DIR } from '../../src/local/rspamd.ts';
import { unixSocketUrl } from '../../src/shared/infra/one-shot-http.ts';
import { createSpamFilter, OWNER_MIN_LEARNS, type SpamSample } from '../../src/shared/spam/spam-filter.ts';
import { defaultSubject } from '../../src/shared/submissions/submissions.ts';

const sample: SpamSample = {
  mailFrom: 'forms@example.test',
  ownerEmail: 'owner@example.test',
  ownerMailbox: 'owner@example.test',
  visitorEmail: 'visitor@example.org',
  subject: 'Pricing',
  message: 'What does the yearly plan cost?',
  customFields: [],
  filenames: [],
};

const servers: net.Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

/** A filter whose every connection is handled by `onConnection`; also what each connection sent. */
async function serve(onConnection: (socket: net.Socket) => void): Promise<{ url: string; received: string[] }> {
  const received: string[] = [];
  const server = net.createServer((socket) => {
    const index = received.push('') - 1;
    socket.on('data', (chunk) => (received[index] = received[index]! + chunk.toString('latin1')));
    socket.on('error', () => {
      // A client that gives up resets its connection; without a listener that would throw in the test run.
    });
    onConnection(socket);
  });
  servers.push(server);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { url: `http://127.0.0.1:${(server.address() as net.AddressInfo).port}`, received };
}

const filterAt = (url: string) => createSpamFilter({ scanUrl: url, controllerUrl: url, password: 'secret' });

/** Answers `reply` once the request's body arrived, then closes unless `keepOpen`. */
const answering =
  (reply: string | Buffer, keepOpen = false) =>
  (socket: net.Socket) => {
    let request = '';
    socket.on('data', (chunk) => {
      request += chunk.toString('latin1');
      const length = Number(/content-length: (\d+)/i.exec(request)?.[1] ?? -1);
      const headEnd = request.indexOf('\r\n\r\n');
      if (headEnd >= 0 && request.length - headEnd - 4 >= length) {
        if (keepOpen) socket.write(reply);
        else socket.end(reply);
      }
    });
  };

describe('the spam filter client', () => {
  it('reads a verdict, sending the owner in Deliver-To and the password', async () => {
    const verdict = '{"score":7.5,"symbols":{"FORM_LINKS":{"score":7.5}}}';
    // Left open after the answer: its Content-Length says where it ends.
    const { url, received } = await serve(answering(`HTTP/1.1 200 OK\r\nContent-Length: ${verdict.length}\r\n\r\n${verdict}`, true));
    const scan = await filterAt(url).check(sample, 2_000);
    expect(scan).toEqual({ score: 7.5, reasons: [{ symbol: 'FORM_LINKS', score: 7.5 }] });
    expect(received[0]).toMatch(/^POST \/checkv2 HTTP\/1\.0\r\n/);
    expect(received[0]).toContain('\r\nDeliver-To: owner@example.test\r\n');
    expect(received[0]).toContain('\r\nPassword: secret\r\n');
    expect(received[0]).toContain('What does the yearly plan cost?');
  });

  it("reaches a filter on a Unix socket (`unix:` and the socket's path) and reads its verdict", async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cfs-socket-'));
    try {
      const socketPath = path.join(dir, 'normal.sock');
      const verdict = '{"score":2.5,"symbols":{"BAYES_HAM":{"score":-2.5}}}';
      const received: string[] = [];
      const server = net.createServer((socket) => {
        const index = received.push('') - 1;
        socket.on('data', (chunk) => (received[index] = received[index]! + chunk.toString('latin1')));
        answering(`HTTP/1.0 200 OK\r\nContent-Length: ${verdict.length}\r\n\r\n${verdict}`)(socket);
      });
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(socketPath, resolve));
      const scan = await filterAt(`unix:${socketPath}`).check(sample, 2_000);
      expect(scan).toEqual({ score: 2.5, reasons: [] });
      expect(received[0]).toMatch(/^POST \/checkv2 HTTP\/1\.0\r\nHost: localhost\r\n/);
      expect(received[0]).toContain('What does the yearly plan cost?');
      // Nothing listens there any more: an error (the email goes out unchecked), not a hang.
      await new Promise((resolve) => servers.pop()!.close(resolve));
      await expect(filterAt(`unix:${socketPath}`).check(sample, 2_000)).rejects.toThrow(/ENOENT|ECONNREFUSED/);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('reaches a socket whose path holds a %, a ? or a #, as npm start names it', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cfs-100%zz?#-'));
    try {
      const socketPath = path.join(dir, 'normal.sock');
      const server = net.createServer(answering('HTTP/1.0 200 OK\r\n\r\n{"score":1.5}'));
      servers.push(server);
      await new Promise<void>((resolve) => server.listen(socketPath, resolve));
      expect(await filterAt(unixSocketUrl(socketPath)).check(sample, 2_000)).toEqual({ score: 1.5, reasons: [] });
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("asks for the owner's own statistics only once they count, as rspamd's configuration says", async () => {
    const { url, received } = await serve(answering('HTTP/1.0 200 OK\r\n\r\n{"score":0}'));
    await filterAt(url).check({ ...sample, ownerStatistics: false }, 2_000);
    await filterAt(url).check({ ...sample, ownerStatistics: true }, 2_000);
    expect(received.map((request) => /\r\nSettings-ID: ([\w-]+)\r\n/.exec(request)?.[1])).toEqual(['form-shared', 'form']);
    const statistics = readFileSync(`${RSPAMD_CONFIG_DIR}/override.d/statistic.conf`, 'utf8');
    expect(/name = "owner";[\s\S]*?min_learns = (\d+);/.exec(statistics)?.[1]).toBe(String(OWNER_MIN_LEARNS));
    const profiles = readFileSync(`${RSPAMD_CONFIG_DIR}/local.d/settings.conf`, 'utf8');
    expect(profiles).toMatch(/form-shared \{[^}]*symbols_disabled = \["BAYES_OWNER_SPAM", "BAYES_OWNER_HAM"\]/s);
  });

  it('gives up on a filter that accepts and never answers after the timeout', async () => {
    const { url } = await serve(() => {
      // Accepts the connection and never answers.
    });
    const started = performance.now();
    await expect(filterAt(url).check(sample, 200)).rejects.toThrow('no answer within 200 ms');
    expect(performance.now() - started).toBeLessThan(2_000);
  });

  it('refuses an answer that is not HTTP, one without a score, and one past 1 MB', async () => {
    await expect(filterAt((await serve(answering('SPAMD/1.5 0 EX_OK\r\n'))).url).check(sample, 2_000)).rejects.toThrow('not HTTP');
    await expect(filterAt((await serve(answering('HTTP/1.0 200 OK\r\n\r\n{"action":"no action"}'))).url).check(sample, 2_000)).rejects.toThrow(
      'without a score',
    );
    const huge = Buffer.concat([Buffer.from('HTTP/1.0 200 OK\r\n\r\n{"score":0,"pad":"'), Buffer.alloc(1024 * 1024 + 1, 'a')]);
    await expect(filterAt((await serve(answering(huge))).url).check(sample, 5_000)).rejects.toThrow('too large');
    await expect(filterAt((await serve((socket) => socket.destroy())).url).check(sample, 2_000)).rejects.toThrow();
  });

  it('takes an answer cut short of its Content-Length for an error', async () => {
    const { url } = await serve(answering('HTTP/1.0 200 OK\r\nContent-Length: 500\r\n\r\n{"score":0}'));
    await expect(filterAt(url).check(sample, 2_000)).rejects.toThrow('closed mid-answer');
  });

  it('sends no header a line break in a value would forge, and connects to nobody then', async () => {
    const { url, received } = await serve(answering('HTTP/1.0 200 OK\r\n\r\n{"score":0}'));
    await expect(filterAt(url).check({ ...sample, ownerMailbox: 'owner@example.test\r\nSettings-ID: nothing' }, 2_000)).rejects.toThrow('cannot be sent');
    expect(received).toEqual([]);
  });

  it("sends the visitor's subject, and none for a submission that came without one (the service's own says nothing)", async () => {
    const { url, received } = await serve(answering('HTTP/1.0 200 OK\r\n\r\n{"score":0}'));
    await filterAt(url).check(sample, 2_000);
    await filterAt(url).check({ ...sample, subject: defaultSubject(sample.visitorEmail) }, 2_000);
    await filterAt(url).learn({ ...sample, subject: defaultSubject(sample.visitorEmail) }, 'spam', 2_000);
    const subjects = received.map((request) => /\r\nSubject: (.*)\r\n/.exec(request)?.[1]);
    expect(subjects).toEqual(['Pricing', '', '']);
  });

  it('learns: taught on 200, known on 204 or "already learned"', async () => {
    expect(
      await filterAt((await serve(answering('HTTP/1.0 200 OK\r\nConnection: close\r\nContent-Length: 16\r\n\r\n{"success":true}trailing bytes'))).url).learn(
        sample,
        'spam',
        2_000,
      ),
    ).toBe('taught');
    expect(await filterAt((await serve(answering('HTTP/1.0 204 No Content\r\n\r\n'))).url).learn(sample, 'ham', 2_000)).toBe('known');
    const already = 'HTTP/1.0 404 Not Found\r\n\r\n{"error":"<abc> has been already learned as spam, ignore it"}';
    expect(await filterAt((await serve(answering(already))).url).learn(sample, 'spam', 2_000)).toBe('known');
  });
});

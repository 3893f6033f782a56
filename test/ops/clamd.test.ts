// The local clamd that `npm start`, the scanning tests and the benchmarks run (src/local/clamd.ts),
// with the tests' own signatures: it answers on its socket, finds what its signatures name, takes a
// file as large as the service streams, runs as the user who starts it, and can be stopped, started
// and paused for the tests of a scanner that is down or slow.
import { mkdir, mkdtemp, readFile, rm, stat } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { clamdCommand, startClamd } from '../../src/local/clamd.ts';
import { ServiceStartError } from '../../src/local/processes.ts';
import {
  EICAR,
  EICAR_SIGNATURE,
  instream,
  startTestClamd,
  TEST_INFECTED_BYTES,
  TEST_INFECTED_SIGNATURE,
  writeTestSignatures,
  type TestClamd,
} from '../support/clamd.ts';

const MIB = 1024 * 1024;
let clamd: TestClamd;

beforeAll(async () => {
  clamd = await startTestClamd();
});
afterAll(async () => {
  await clamd?.close();
});

describe('a local clamd with the test signatures', () => {
  it('answers PING with PONG on its socket, which only its user may open', async () => {
    expect(await clamdCommand(clamd.socket, 'PING')).toBe('PONG');
    expect(await clamdCommand(clamd.socket, 'VERSION')).toMatch(/^ClamAV \d+\.\d+/);
    expect((await stat(clamd.socket)).mode & 0o777).toBe(0o600);
  });

  it('says a clean file is OK and names the signature of each infected one', async () => {
    expect(await instream(clamd.socket, Buffer.from('Hello, a plain attachment.\n'))).toBe('stream: OK');
    expect(await instream(clamd.socket, TEST_INFECTED_BYTES)).toBe(`stream: ${TEST_INFECTED_SIGNATURE} FOUND`);
    expect(await instream(clamd.socket, Buffer.from(EICAR))).toBe(`stream: ${EICAR_SIGNATURE} FOUND`);
    // The EICAR signature matches anywhere in a file; the MD5 one only the whole file.
    expect(await instream(clamd.socket, Buffer.from(`a letter\n${EICAR}\nregards\n`))).toBe(`stream: ${EICAR_SIGNATURE} FOUND`);
    expect(await instream(clamd.socket, Buffer.concat([TEST_INFECTED_BYTES, Buffer.from('\n')]))).toBe('stream: OK');
  });

  it('scans a whole 10 MiB file (the most the service streams) and refuses a stream over 11 MiB', async () => {
    const tenMib = Buffer.concat([Buffer.alloc(10 * MIB - EICAR.length, 'a'), Buffer.from(EICAR)]);
    expect(await instream(clamd.socket, tenMib)).toBe(`stream: ${EICAR_SIGNATURE} FOUND`);
    expect(await instream(clamd.socket, Buffer.alloc(11 * MIB + 1, 'a'))).toMatch(/size limit exceeded.*ERROR/i);
  });

  it('runs as the user who started it', async () => {
    const status = await readFile(`/proc/${clamd.pid()}/status`, 'utf8');
    expect(status).toMatch(new RegExp(`^Uid:\\s+${process.getuid!()}\\s`, 'm'));
  });

  it('goes down on stop and answers again on the same socket when started', async () => {
    await clamd.stop();
    await expect(clamdCommand(clamd.socket, 'PING')).rejects.toThrow();
    await clamd.start();
    expect(await clamdCommand(clamd.socket, 'PING')).toBe('PONG');
  });

  it('does not answer while paused, and answers once resumed', async () => {
    clamd.pause();
    try {
      await expect(clamdCommand(clamd.socket, 'PING', 1_000)).rejects.toThrow(/no answer/);
    } finally {
      clamd.resume();
    }
    expect(await clamdCommand(clamd.socket, 'PING', 10_000)).toBe('PONG');
  });
});

describe('starting a local clamd', () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), 'cfs-clamd-start-'));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it('fails with clamd’s own words and what to do when there is no signature database', async () => {
    const empty = path.join(dir, 'empty-db');
    await mkdir(empty);
    const started = startClamd({ databaseDir: empty });
    await expect(started).rejects.toThrow(ServiceStartError);
    await expect(started).rejects.toThrow(/No supported database files found[\s\S]*What to do: .*freshclam/);
  });

  it('puts its socket where a socket fits when its directory’s path is too long for one', async () => {
    const deep = path.join(dir, 'a-directory-whose-path-is-too-long-for-a-unix-socket'.repeat(2));
    const db = path.join(dir, 'db');
    await writeTestSignatures(db);
    const service = await startClamd({ databaseDir: db, dir: deep });
    try {
      expect(Buffer.byteLength(service.socket)).toBeLessThanOrEqual(107);
      expect(await instream(service.socket, TEST_INFECTED_BYTES)).toBe(`stream: ${TEST_INFECTED_SIGNATURE} FOUND`);
    } finally {
      await service.stop();
    }
  });
});

// A real clamd for a test file: its own instance on its own socket, loading the tests' own
// signatures (clamd-signatures.ts), so it starts in a second or two. The global setup finds or
// installs clamd. It can be stopped and started again on the same socket (a scanner that is down)
// and paused (a scanner that does not answer).
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { inject } from 'vitest';
import { startClamd, type ClamdService } from '../../src/local/clamd.ts';
import { signalChild } from '../../src/local/processes.ts';
import { writeTestSignatures } from './clamd-signatures.ts';

export { EICAR, EICAR_SIGNATURE, TEST_INFECTED_BYTES, TEST_INFECTED_SIGNATURE, writeTestSignatures } from './clamd-signatures.ts';

export type TestClamd = {
  /** Its Unix socket: the same across stop and start. */
  socket: string;
  /** Its process id while it runs. */
  pid: () => number | undefined;
  /** The settings that point the workers at it. */
  env: { CLAMD_SOCKET: string };
  /** Stops clamd (its socket goes): scans fail until `start`. */
  stop: () => Promise<void>;
  /** Starts it again on the same socket, once it answers PING. */
  start: () => Promise<void>;
  /** Freezes it (SIGSTOP): connections are accepted by the kernel but nothing is answered, until `resume`. */
  pause: () => void;
  resume: () => void;
  /** Stops it for good and removes its files. */
  close: () => Promise<void>;
};

export async function startTestClamd(): Promise<TestClamd> {
  const found = inject('testTools').clamd!;
  if (found.problem !== undefined) throw new Error(found.problem);
  const dir = await mkdtemp(path.join(tmpdir(), 'cfs-test-clamd-'));
  const options = { databaseDir: path.join(dir, 'db'), dir: path.join(dir, 'run') };
  let clamd: ClamdService | undefined;
  try {
    await writeTestSignatures(options.databaseDir);
    clamd = await startClamd(options);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
  const { socket } = clamd;
  const stop = async () => {
    const running = clamd;
    clamd = undefined;
    if (running) await running.stop();
  };
  return {
    socket,
    pid: () => clamd?.child.pid,
    env: { CLAMD_SOCKET: socket },
    stop,
    start: async () => {
      if (clamd) return;
      clamd = await startClamd(options);
      if (clamd.socket !== socket) throw new Error(`clamd came back on ${clamd.socket}, not ${socket}`);
    },
    pause: () => {
      if (clamd) signalChild(clamd.child, 'SIGSTOP');
    },
    resume: () => {
      if (clamd) signalChild(clamd.child, 'SIGCONT');
    },
    close: async () => {
      if (clamd) signalChild(clamd.child, 'SIGCONT');
      await stop();
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/**
 * Scans `bytes` with clamd's INSTREAM command, as a client of its own (the service's is what the
 * tests test): clamd's answer without the terminating NUL, e.g. `stream: OK`.
 */
export function instream(socket: string, bytes: Buffer, timeoutMs = 30_000): Promise<string> {
  return new Promise((resolve, reject) => {
    const connection = createConnection(socket);
    let answer = '';
    // clamd answers a stream over its limit at once and closes: the rest of the write then fails.
    const settle = (error?: Error) =>
      answer.endsWith('\0') ? resolve(answer.slice(0, -1)) : reject(error ?? new Error(`clamd closed the connection: ${answer}`));
    connection.setTimeout(timeoutMs, () => connection.destroy(new Error(`clamd did not answer within ${timeoutMs} ms`)));
    connection.on('connect', () => {
      connection.write('zINSTREAM\0');
      // Chunks as a client sends them (each its length, then its bytes), then a zero length: the end.
      for (let offset = 0; offset < bytes.length; offset += INSTREAM_CHUNK) {
        const chunk = bytes.subarray(offset, offset + INSTREAM_CHUNK);
        const length = Buffer.alloc(4);
        length.writeUInt32BE(chunk.length);
        connection.write(Buffer.concat([length, chunk]));
      }
      connection.write(Buffer.alloc(4));
    });
    connection.on('data', (chunk: Buffer) => {
      answer += chunk.toString();
      if (answer.endsWith('\0')) connection.end();
    });
    connection.on('error', settle);
    connection.on('close', () => settle());
  });
}

const INSTREAM_CHUNK = 64 * 1024;

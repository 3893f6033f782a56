// A client of clamd's INSTREAM command (clamd(8)): `zINSTREAM\0`, then the file in chunks, each
// its length as 4 bytes big-endian and its bytes, then a chunk of length 0; clamd answers one
// line ended by \0: `stream: OK`, `stream: <signature> FOUND`, or `... ERROR` (among them `INSTREAM
// size limit exceeded. ERROR`, past its StreamMaxLength, after which it closes the connection).
// One connection per file; the whole exchange is bounded by `timeoutMs`.
import { createConnection, type Socket } from 'node:net';
import type { Readable } from 'node:stream';

/** Where clamd listens: its Unix socket, or a TCP address. */
export type ClamdAddress = { socket: string } | { host: string; port: number };

export type ClamdVerdict = { kind: 'clean' } | { kind: 'infected'; signature: string } | { kind: 'too-large' };

/** clamd could not be reached, did not answer in time, or answered an error about itself: try again later. */
export class ScannerUnavailableError extends Error {
  override name = 'ScannerUnavailableError';
  /** clamd closed the connection while the file was still being sent, without an answer that could be read. */
  readonly hungUpMidStream: boolean;
  constructor(message: string, hungUpMidStream = false) {
    super(message);
    this.hungUpMidStream = hungUpMidStream;
  }
}

/** The largest chunk sent at once; clamd reads each into a buffer of its own. */
const CHUNK_BYTES = 64 * 1024;

/** Scans `body` (consumed, and destroyed when the scan ends early). A failure of `body` itself is thrown as it is. */
export function scanStream(address: ClamdAddress, body: Readable, timeoutMs: number): Promise<ClamdVerdict> {
  return exchange(address, timeoutMs, async (socket): Promise<boolean> => {
    if (!(await write(socket, Buffer.from('zINSTREAM\0')))) return false;
    for await (const data of body as AsyncIterable<Buffer>) {
      for (let start = 0; start < data.length; start += CHUNK_BYTES) {
        const chunk = data.subarray(start, start + CHUNK_BYTES);
        const length = Buffer.alloc(4);
        length.writeUInt32BE(chunk.length);
        if (!(await write(socket, Buffer.concat([length, chunk])))) return false;
      }
    }
    return write(socket, Buffer.alloc(4));
  })
    .then(verdictOf)
    .catch(async (error: unknown) => {
      // Past its StreamMaxLength clamd answers and hangs up at once; a write that fails then can
      // lose the answer with the connection. A clamd that hung up mid-stream and still answers PING
      // refused the stream's size: it is alive, and this file is too large for it.
      if (error instanceof ScannerUnavailableError && error.hungUpMidStream && (await pingClamd(address, timeoutMs))) return { kind: 'too-large' } as const;
      throw error;
    })
    .finally(() => body.destroy());
}

/** Whether clamd answers PING with PONG within `timeoutMs`. */
export async function pingClamd(address: ClamdAddress, timeoutMs: number): Promise<boolean> {
  try {
    return (await exchange(address, timeoutMs, (socket) => write(socket, Buffer.from('zPING\0')))) === 'PONG';
  } catch {
    return false;
  }
}

function verdictOf(answer: string): ClamdVerdict {
  if (answer === 'stream: OK') return { kind: 'clean' };
  const found = /^stream: (.+) FOUND$/.exec(answer);
  if (found) return { kind: 'infected', signature: found[1]! };
  if (/size limit exceeded/i.test(answer)) return { kind: 'too-large' };
  throw new ScannerUnavailableError(`clamd answered: ${answer.slice(0, 200)}`);
}

/**
 * Connects, runs `send`, and resolves with clamd's answer (up to its \0, trimmed). An answer that
 * comes while `send` still writes (the size limit) ends the exchange: what clamd said stands.
 */
function exchange(address: ClamdAddress, timeoutMs: number, send: (socket: Socket) => Promise<boolean>): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = 'socket' in address ? createConnection(address.socket) : createConnection(address.port, address.host);
    let answer = '';
    let settled = false;
    let connected = false;
    /** Every byte written: clamd's hanging up before that is its refusal of the stream. */
    let sent = false;
    const finish = (settle: () => void) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      socket.destroy();
      settle();
    };
    const answered = () => finish(() => resolve(answer.replace(/\0[\s\S]*$/, '').trim()));
    const unavailable = (why: string, hungUp = false) => finish(() => reject(new ScannerUnavailableError(why, hungUp)));
    const timer = setTimeout(() => unavailable(`clamd did not answer within ${timeoutMs} ms`), timeoutMs);
    socket.setEncoding('utf8');
    socket.on('data', (data: string) => {
      answer += data;
      if (answer.includes('\0')) answered();
    });
    socket.on('close', () => (answer ? answered() : unavailable('clamd closed the connection without an answer', connected && !sent)));
    // A write cut off by clamd closing (EPIPE, ECONNRESET) is followed by 'close': its answer, if any, is read there.
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (!answer && error.code !== 'EPIPE' && error.code !== 'ECONNRESET') unavailable(`clamd: ${error.message}`);
    });
    socket.once('connect', () => {
      connected = true;
      send(socket).then(
        (all) => (sent = all),
        (error: unknown) => finish(() => reject(error instanceof Error ? error : new Error(String(error)))),
      );
    });
  });
}

/** Writes, waiting for the socket to drain; false when the socket closed meanwhile (clamd answered or went away). */
function write(socket: Socket, data: Buffer): Promise<boolean> {
  if (socket.destroyed || !socket.writable) return Promise.resolve(false);
  if (socket.write(data)) return Promise.resolve(true);
  return new Promise((resolve) => {
    const done = (drained: boolean) => {
      socket.off('drain', onDrain);
      socket.off('close', onClose);
      resolve(drained);
    };
    const onDrain = () => done(true);
    const onClose = () => done(false);
    socket.on('drain', onDrain);
    socket.on('close', onClose);
  });
}

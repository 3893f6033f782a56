// The benchmark's SMTP sink, run as its own process: it accepts every message and reports the
// arrivals and the acceptances to its parent over IPC in small batches.

// It waits SINK_DELAY_MS before answering a message (as a real server takes its time) and keeps
// nothing but the Message-ID and the arrival time. Told to refuse, it answers every message 451
// (a relay that is down for everyone) and counts it nowhere. An acceptance is the moment it answers 250 (the
// benchmark compares that time with when it killed a worker).
import type { AddressInfo } from 'node:net';
import { SMTPServer } from 'smtp-server';

type Arrival = [id: string, at: number, bytes: number];

const send = (message: unknown) => process.send?.(message);
let delayMs = Number(process.env.SINK_DELAY_MS ?? '0');
let refusing = false;
let pending: Arrival[] = [];
let accepted: Arrival[] = [];
const now = () => performance.timeOrigin + performance.now();

const server = new SMTPServer({
  authOptional: true,
  disabledCommands: ['STARTTLS'],
  logger: false,
  size: 200 * 1024 * 1024,
  onData(stream, _session, callback) {
    let head = '';
    let bytes = 0;
    stream.on('data', (chunk: Buffer) => {
      bytes += chunk.length;
      // The headers are at the start: keep only enough of the message to read its Message-ID.
      if (head.length < 16_384) head += chunk.toString('latin1', 0, Math.min(chunk.length, 16_384));
    });
    stream.on('end', () => {
      if (refusing) {
        callback(Object.assign(new Error('Try again later'), { responseCode: 451 }));
        return;
      }
      const at = now();
      const id = /^Message-ID:\s*<([^@>]+)@/im.exec(head)?.[1] ?? '';
      pending.push([id, at, bytes]);
      const accept = () => {
        accepted.push([id, now(), bytes]);
        callback();
      };
      if (delayMs > 0) setTimeout(accept, delayMs);
      else accept();
    });
  },
});
server.on('error', () => undefined);

setInterval(() => {
  if (pending.length > 0) send({ type: 'mail', items: pending });
  if (accepted.length > 0) send({ type: 'accepted', items: accepted });
  pending = [];
  accepted = [];
}, 20);

process.on('message', (message: { type: string; ms?: number; on?: boolean }) => {
  if (message.type === 'delay') delayMs = message.ms ?? 0;
  if (message.type === 'refuse') refusing = message.on ?? false;
});
process.on('disconnect', () => process.exit(0));
process.on('SIGTERM', () => server.close(() => process.exit(0)));

server.listen(0, '127.0.0.1', () => {
  send({ type: 'ready', port: (server.server.address() as AddressInfo).port });
});

// Aborts a request whose body stops coming. Node's own timeouts bound the whole request (minutes,
// so that large uploads on slow links pass); this bounds a client that opens a body and then sends
// nothing, or a trickle: while the API waits for body bytes, every `idleMs` must bring at least
// `minBytesPerSecond` × idleMs of them. Time the API itself is not reading (a handler that has not
// started on the body yet, or backpressure from storage) does not count against the client.
// Aborting destroys the socket, as a client disconnect does: the handlers clean up as for one.
import type { IncomingMessage } from 'node:http';

export type BodyProgressOptions = { idleMs: number; minBytesPerSecond: number; onAbort: () => void };

export function watchBodyProgress(req: IncomingMessage, options: BodyProgressOptions): void {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (!hasBody) return;
  const { socket } = req;
  const tickMs = Math.min(1_000, Math.max(25, Math.floor(options.idleMs / 4)));
  const minBytes = Math.max(1, Math.ceil((options.minBytesPerSecond * options.idleMs) / 1000));
  let waitedMs = 0;
  let bytesAtStart = socket.bytesRead;

  const timer = setInterval(() => {
    if (req.complete || socket.destroyed) {
      clearInterval(timer);
      return;
    }
    // Waiting for the client: the body is being read and nothing is left unread in the API.
    const waiting = req.readableFlowing === true && req.readableLength === 0;
    if (!waiting) {
      waitedMs = 0;
      bytesAtStart = socket.bytesRead;
      return;
    }
    waitedMs += tickMs;
    if (waitedMs < options.idleMs) return;
    if (socket.bytesRead - bytesAtStart < minBytes) {
      clearInterval(timer);
      options.onAbort();
      socket.destroy();
      return;
    }
    waitedMs = 0;
    bytesAtStart = socket.bytesRead;
  }, tickMs);
  timer.unref();
}

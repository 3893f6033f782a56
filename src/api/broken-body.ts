// A request whose body could not be read whole because of its client: the connection closed
// mid-body (by the client, or by the stalled-body watchdog), or Node's parser refused what came on
// the connection (a malformed chunked encoding, in this request or in one pipelined after it, which
// Node answers with its own 400 before closing; the requests still queued on that connection are
// destroyed with it, read or not). Whatever the body read then raises (raw-body's "stream is not
// readable" or "request aborted", ECONNRESET "aborted", …), it is the client's doing: a 400 logged
// at info, not a 500 that anyone could raise to page the operator.
import type { IncomingMessage } from 'node:http';
import { errors } from './api-errors.ts';

/** Whether the request has a body that was not read to its end and now cannot be: its connection is gone. */
export function bodyBrokenOff(req: IncomingMessage): boolean {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  return hasBody && !req.readableEnded && (req.destroyed || req.socket.destroyed);
}

/** The client's error for a body broken off; nobody reads its answer, the metrics and the log do. */
export const brokenBodyError = () => errors.malformedBody('the request was aborted.');

// The bounce receiver: an SMTP server for BOUNCE_DOMAIN that takes the reports relays send to the
// return paths of our emails (../shared/bounces/return-path.ts). What happens to a message, in order:
//   connect     at most BOUNCE_MAX_CONNECTIONS_PER_IP open per client address (421 past it; a
//               refused connection is not counted, so its close frees no place)
//   MAIL FROM   at most BOUNCE_MESSAGES_PER_MINUTE_PER_IP per client address (451 past it: retry later)
//   RCPT TO     a return path whose MAC verifies, or postmaster@BOUNCE_DOMAIN (RFC 5321 section
//               4.5.1: a server must take mail for its postmaster); 550 otherwise, so a forged
//               bounce changes nothing
//   DATA        at most BOUNCE_MAX_BYTES (552 past it), read as a report (../shared/bounces/report.ts), recorded on
//               its return paths' rows (../shared/bounces/record.ts) and committed before the 250; PostgreSQL
//               unreachable → 451. Mail to postmaster is only logged (sender, size, subject).
// It is not a relay and takes no other mail: no AUTH, and STARTTLS only with a certificate.
import { readFileSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import type pg from 'pg';
import { SMTPServer, type SMTPServerAddress, type SMTPServerDataStream, type SMTPServerSession } from 'smtp-server';
import type { Logger } from '../shared/infra/log.ts';
import { bounceRefusals, bounces } from '../shared/infra/metrics.ts';
import type { ReturnPaths, ReturnTarget } from '../shared/bounces/return-path.ts';
import { recordReport, type SuppressionPolicy } from '../shared/bounces/record.ts';
import { readReport } from '../shared/bounces/report.ts';
import { oneLine } from '../shared/infra/display-text.ts';
import { deliveryKinds } from '../shared/deliveries/delivery-kinds.ts';
import { ClientLimits } from './client-limits.ts';

export type ReceiverSettings = {
  host: string;
  port: number;
  maxBytes: number;
  maxConnectionsPerIp: number;
  messagesPerMinutePerIp: number;
  tls: { certFile: string; keyFile: string } | undefined;
  suppression: SuppressionPolicy;
};

export type ReceiverDeps = {
  pool: pg.Pool;
  returnPaths: ReturnPaths;
  /** Enqueues the `submission.bounced` webhook deliveries once committed (the reconciler does it should this fail). */
  enqueueWebhooks: (deliveryIds: string[]) => Promise<void>;
  log: Logger;
};

/** Recipients one message may name: a DSN names one; a few allow for a relay that batches. */
const MAX_RECIPIENTS = 10;
/** Every connection at once, whatever its address: a bound on the sockets and memory held. */
const MAX_CLIENTS = 1_000;
/** An idle or slow client is dropped after this (a relay sends a DSN in well under a second). */
const SOCKET_TIMEOUT_MS = 30_000;
/** Characters of a postmaster message's subject kept in the log. */
const MAX_SUBJECT = 200;

type ReplyError = Error & { responseCode: number };
const reply = (code: number, text: string): ReplyError => Object.assign(new Error(text), { responseCode: code });

/** Targets of the session's recipients, kept on the session as RCPT TO accepts them. */
const targetsOf = new WeakMap<SMTPServerSession, ReturnTarget[]>();
/**
 * The address each admitted session was counted under. smtp-server calls onClose for refused
 * connections too (by onConnect or by maxClients): only those counted here may be uncounted.
 */
const admitted = new WeakMap<SMTPServerSession, string>();

export async function startReceiver(settings: ReceiverSettings, deps: ReceiverDeps): Promise<{ server: SMTPServer; port: number; close: () => Promise<void> }> {
  const limits = new ClientLimits(settings.maxConnectionsPerIp, settings.messagesPerMinutePerIp);
  const server = new SMTPServer({
    name: deps.returnPaths.domain,
    banner: 'bounce receiver',
    size: settings.maxBytes,
    rejectOversized: true,
    authOptional: true,
    disabledCommands: settings.tls ? ['AUTH'] : ['AUTH', 'STARTTLS'],
    ...(settings.tls ? { key: readFileSync(settings.tls.keyFile), cert: readFileSync(settings.tls.certFile) } : {}),
    maxClients: MAX_CLIENTS,
    socketTimeout: SOCKET_TIMEOUT_MS,
    closeTimeout: 5_000,
    logger: false,
    onConnect(session, callback) {
      if (!limits.connect(session.remoteAddress)) {
        bounceRefusals.inc({ reason: 'connections' });
        return callback(reply(421, `4.7.0 Too many connections from your address (at most ${settings.maxConnectionsPerIp})`));
      }
      admitted.set(session, session.remoteAddress);
      callback();
    },
    onClose(session) {
      const address = admitted.get(session);
      if (address === undefined) return;
      admitted.delete(session);
      limits.disconnect(address);
    },
    onMailFrom(_address, session, callback) {
      if (!limits.message(session.remoteAddress)) {
        bounceRefusals.inc({ reason: 'rate' });
        return callback(reply(451, `4.7.1 Too many messages from your address (at most ${settings.messagesPerMinutePerIp} a minute); try again later`));
      }
      targetsOf.set(session, []);
      callback();
    },
    onRcptTo(address: SMTPServerAddress, session, callback) {
      // Accepted without a target: smtp-server keeps it in session.envelope.rcptTo, where onData finds it.
      if (isPostmaster(address.address, deps.returnPaths.domain)) return callback();
      const target = deps.returnPaths.read(address.address);
      const targets = targetsOf.get(session) ?? [];
      if (!target) {
        bounceRefusals.inc({ reason: 'recipient' });
        return callback(reply(550, '5.1.1 No such return path here'));
      }
      if (targets.length >= MAX_RECIPIENTS) return callback(reply(452, '4.5.3 Too many recipients'));
      targets.push(target);
      targetsOf.set(session, targets);
      callback();
    },
    onData(stream, session, callback) {
      void (async () => {
        const raw = await readMessage(stream, settings.maxBytes);
        if (!raw) {
          bounceRefusals.inc({ reason: 'size' });
          return callback(reply(552, `5.3.4 Message too big (at most ${settings.maxBytes} bytes)`));
        }
        const reports = (targetsOf.get(session) ?? []).length > 0;
        if (reports) {
          try {
            await handleMessage(raw, session, deps, settings.suppression);
          } catch (error) {
            bounceRefusals.inc({ reason: 'unavailable' });
            deps.log.warn({ err: error }, 'a report could not be recorded; the relay is asked to retry');
            return callback(reply(451, '4.3.0 Could not record the report now; try again later'));
          }
        }
        // Logged once the reports are committed: a 451 above means a retry, which would log it again.
        if (session.envelope.rcptTo.some((rcpt) => isPostmaster(rcpt.address, deps.returnPaths.domain))) {
          const sender = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
          deps.log.info({ sender, size: raw.length, subject: subjectOf(raw), client: session.remoteAddress }, 'message to postmaster received');
        }
        callback(null, reports ? 'Report recorded' : 'Received');
      })().catch((error: unknown) => {
        // Reading the stream failed: the connection is gone, there is nobody left to answer.
        deps.log.debug({ err: error }, 'a message could not be read');
      });
    },
  });
  server.on('error', (error) => deps.log.warn({ err: error }, 'bounce receiver error'));
  await new Promise<void>((resolve, reject) => {
    server.server.once('error', reject);
    server.listen(settings.port, settings.host, () => {
      server.server.off('error', reject);
      resolve();
    });
  });
  const port = (server.server.address() as AddressInfo).port;
  return { server, port, close: () => new Promise<void>((resolve) => server.close(() => resolve())) };
}

/** `postmaster@<domain>`, any case, or the bare `postmaster` RFC 5321 allows without a domain. */
function isPostmaster(address: string, domain: string): boolean {
  const at = address.lastIndexOf('@');
  if (at < 0) return address.toLowerCase() === 'postmaster';
  return address.slice(0, at).toLowerCase() === 'postmaster' && address.slice(at + 1).toLowerCase() === domain.toLowerCase();
}

/** The Subject header as it stands (encoded words not decoded), on one line and cut short; '' if none. */
function subjectOf(raw: Buffer): string {
  const end = raw.indexOf('\r\n\r\n');
  const header = raw.subarray(0, end < 0 ? raw.length : end).toString('latin1');
  const match = /^subject:[ \t]*(.*(?:\r?\n[ \t].*)*)/im.exec(header);
  return match ? oneLine(match[1]!).trim().slice(0, MAX_SUBJECT) : '';
}

/** The message's bytes, or undefined once it is over `maxBytes` (still read to its end, as SMTP requires). */
async function readMessage(stream: SMTPServerDataStream, maxBytes: number): Promise<Buffer | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of stream as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= maxBytes) chunks.push(chunk);
  }
  return stream.sizeExceeded || size > maxBytes ? undefined : Buffer.concat(chunks);
}

async function handleMessage(raw: Buffer, session: SMTPServerSession, deps: ReceiverDeps, suppression: SuppressionPolicy): Promise<void> {
  const sender = session.envelope.mailFrom ? session.envelope.mailFrom.address : '';
  const verdict = await readReport(raw, { sender });
  for (const target of targetsOf.get(session) ?? []) {
    const kind = deliveryKinds[target.kind].metricLabel;
    bounces.inc({ kind, type: verdict.type });
    if (verdict.type === 'ignored') {
      deps.log.info({ table: kind, id: target.id, reason: verdict.reason, sender }, 'message to a return path ignored');
      continue;
    }
    const { outcome, webhookDeliveryIds } = await recordReport(deps.pool, target, verdict, suppression);
    deps.log.info({ table: kind, id: target.id, type: verdict.type, status: verdict.status, outcome }, 'report recorded');
    if (webhookDeliveryIds.length) {
      await deps.enqueueWebhooks(webhookDeliveryIds).catch((error: unknown) => deps.log.warn({ err: error }, 'enqueue failed; left for the reconciler'));
    }
  }
}

// A real SMTP server that records what arrives, for the tests. Its answers can be scripted
// (a 451 twice, a 550) to exercise the workers' retries.
import type { AddressInfo } from 'node:net';
import { simpleParser, type ParsedMail } from 'mailparser';
import { SMTPServer, type SMTPServerSession } from 'smtp-server';
import { sleep } from './sleep.ts';

/** `client`: the address the message came from (which host, in the partition tests). */
export type ReceivedMail = { envelope: { from: string; to: string[] }; parsed: ParsedMail; raw: Buffer; client: string };

/** Decides the answer to a message: undefined accepts it, an SMTP reply code and text refuses it. */
export type SinkBehaviour = (session: SMTPServerSession) => { code: number; message: string } | undefined;

/** Conversation steps before the message whose answer a test can script (`refuse`). */
export type SinkStep = 'auth' | 'mail-from' | 'rcpt-to';
type Reply = { code: number; message: string };

export type SmtpSink = {
  url: string;
  port: number;
  messages: ReceivedMail[];
  behave: (behaviour: SinkBehaviour | undefined) => void;
  /** Answers `step` with this reply (undefined: accepts again). Any user and password is accepted otherwise. */
  refuse: (step: SinkStep, reply: Reply | undefined) => void;
  /** Makes the server wait this long before answering each message, as a real one does. */
  delay: (ms: number) => void;
  waitFor: (count: number, timeoutMs?: number) => Promise<ReceivedMail[]>;
  close: () => Promise<void>;
};

/** `port` 0 picks a free one; give a port to restart a sink where a stopped one was. `host`: the address to listen on. */
export async function startSmtpSink(port = 0, host = '127.0.0.1'): Promise<SmtpSink> {
  const messages: ReceivedMail[] = [];
  let behaviour: SinkBehaviour | undefined;
  const refusals = new Map<SinkStep, Reply>();
  const answer = (step: SinkStep, callback: (error?: Error | null) => void) => {
    const reply = refusals.get(step);
    callback(reply ? Object.assign(new Error(reply.message), { responseCode: reply.code }) : undefined);
  };
  let delayMs = 0;
  const server = new SMTPServer({
    authOptional: true,
    disabledCommands: ['STARTTLS'],
    logger: false,
    size: 100 * 1024 * 1024,
    // close() ends the clients' idle pooled connections after this long instead of 30 s, so a test
    // can take the SMTP server away quickly.
    closeTimeout: 500,
    // Plain-text AUTH on loopback, for the tests whose SMTP_URL carries a user and password.
    allowInsecureAuth: true,
    onAuth(auth, _session, callback) {
      const reply = refusals.get('auth');
      if (reply) callback(Object.assign(new Error(reply.message), { responseCode: reply.code }));
      else callback(null, { user: auth.username });
    },
    onMailFrom(_address, _session, callback) {
      answer('mail-from', callback);
    },
    onRcptTo(_address, _session, callback) {
      answer('rcpt-to', callback);
    },
    onData(stream, session, callback) {
      const chunks: Buffer[] = [];
      stream.on('data', (chunk: Buffer) => chunks.push(chunk));
      const received = async () => {
        if (delayMs > 0) await sleep(delayMs);
        const refusal = behaviour?.(session);
        if (refusal) {
          callback(Object.assign(new Error(refusal.message), { responseCode: refusal.code }));
          return;
        }
        const raw = Buffer.concat(chunks);
        const envelope = {
          from: session.envelope.mailFrom ? session.envelope.mailFrom.address : '',
          to: session.envelope.rcptTo.map((rcpt) => rcpt.address),
        };
        simpleParser(raw).then(
          (parsed) => {
            messages.push({ envelope, parsed, raw, client: session.remoteAddress });
            callback();
          },
          (error: unknown) => callback(error as Error),
        );
      };
      stream.on('end', () => {
        received().catch((error: unknown) => callback(error as Error));
      });
    },
  });
  // A client that dies mid-conversation (a killed worker) resets its connection: not the sink's failure.
  server.on('error', () => undefined);
  await new Promise<void>((resolve) => server.listen(port, host, resolve));
  const bound = (server.server.address() as AddressInfo).port;

  return {
    url: `smtp://${host}:${bound}`,
    port: bound,
    messages,
    behave: (next) => {
      behaviour = next;
    },
    refuse: (step, reply) => {
      if (reply) refusals.set(step, reply);
      else refusals.delete(step);
    },
    delay: (ms) => {
      delayMs = ms;
    },
    async waitFor(count, timeoutMs = 20_000) {
      const deadline = Date.now() + timeoutMs;
      while (messages.length < count) {
        if (Date.now() > deadline) throw new Error(`expected ${count} emails at the sink, got ${messages.length}`);
        await sleep(25);
      }
      return messages;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

// A bare SMTP client for tests that need to see each reply of a server (the bounce receiver):
// one command at a time, its reply code and text back. Mail clients such as nodemailer hide a
// refused RCPT behind a single error; here every step is visible.
import { connect, type Socket } from 'node:net';

export type Reply = { code: number; text: string };

export type SmtpSession = {
  /** The server's greeting. */
  greeting: Reply;
  command: (line: string) => Promise<Reply>;
  /** DATA, the message (dot-stuffed here), and the final dot: the reply to the message. */
  data: (message: Buffer | string) => Promise<Reply>;
  /** Whether the server has closed the connection. */
  closed: () => boolean;
  close: () => void;
};

export async function openSmtp(port: number, host = '127.0.0.1', localAddress?: string): Promise<SmtpSession> {
  const socket: Socket = connect({ port, host, ...(localAddress ? { localAddress } : {}) });
  let buffered = '';
  let ended = false;
  const waiting: Array<(reply: Reply) => void> = [];
  const replies: Reply[] = [];
  const deliver = (reply: Reply) => {
    const waiter = waiting.shift();
    if (waiter) waiter(reply);
    else replies.push(reply);
  };
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    buffered += chunk;
    // A reply ends with a line "NNN text"; "NNN-text" lines continue it.
    for (let match = /^(?:\d{3}-.*\r\n)*(\d{3}) (.*)\r\n/.exec(buffered); match; match = /^(?:\d{3}-.*\r\n)*(\d{3}) (.*)\r\n/.exec(buffered)) {
      buffered = buffered.slice(match[0].length);
      deliver({ code: Number(match[1]), text: match[0].trim() });
    }
  });
  const onEnd = () => {
    ended = true;
    for (const waiter of waiting.splice(0)) waiter({ code: 0, text: 'connection closed' });
  };
  socket.on('close', onEnd);
  socket.on('error', onEnd);
  const next = () =>
    new Promise<Reply>((resolve) =>
      replies.length ? resolve(replies.shift()!) : ended ? resolve({ code: 0, text: 'connection closed' }) : waiting.push(resolve),
    );
  const command = (line: string) => {
    if (!ended) socket.write(`${line}\r\n`);
    return next();
  };
  const greeting = await next();
  return {
    greeting,
    command,
    async data(message) {
      const start = await command('DATA');
      if (start.code !== 354) return start;
      const text = (typeof message === 'string' ? message : message.toString('latin1')).replace(/\r?\n/g, '\r\n');
      const stuffed = text.replace(/^\./gm, '..');
      socket.write(Buffer.from(`${stuffed}${stuffed.endsWith('\r\n') ? '' : '\r\n'}.\r\n`, 'latin1'));
      return next();
    },
    closed: () => ended,
    close: () => socket.destroy(),
  };
}

/** One message over one connection: EHLO, MAIL FROM (empty: a bounce), RCPT TO each, DATA; every reply. */
export async function sendRaw(
  port: number,
  envelope: { from: string; to: string[] },
  message: Buffer | string,
  host = '127.0.0.1',
): Promise<{ mailFrom: Reply; rcpt: Reply[]; data: Reply | undefined }> {
  const session = await openSmtp(port, host);
  try {
    await session.command('EHLO relay.test');
    const mailFrom = await session.command(`MAIL FROM:<${envelope.from}>`);
    const rcpt: Reply[] = [];
    for (const to of envelope.to) rcpt.push(await session.command(`RCPT TO:<${to}>`));
    const data = rcpt.some((reply) => reply.code === 250) ? await session.data(message) : undefined;
    await session.command('QUIT');
    return { mailFrom, rcpt, data };
  } finally {
    session.close();
  }
}

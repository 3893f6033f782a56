// The floor of the bounce receiver: a bare smtp-server with the same size limit that takes every
// recipient, reads each message to its end and answers 250. No address check, no parsing, no
// database: what the SMTP exchange alone costs on the same client.
import { SMTPServer } from 'smtp-server';

const maxBytes = 1024 * 1024;
const server = new SMTPServer({
  banner: 'floor receiver',
  size: maxBytes,
  authOptional: true,
  disabledCommands: ['AUTH', 'STARTTLS'],
  logger: false,
  onData(stream, _session, callback) {
    stream.on('data', () => undefined);
    stream.on('end', () => callback());
  },
});
server.listen(0, '127.0.0.1', () => {
  const address = server.server.address();
  process.stdout.write(`floor smtp listening ${typeof address === 'object' && address ? address.port : 0}\n`);
});
const stop = () => server.close(() => process.exit(0));
process.on('SIGTERM', stop);
process.on('SIGINT', stop);

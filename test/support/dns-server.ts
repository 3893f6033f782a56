// A DNS server on loopback UDP serving test blocklist zones: A records for the names given
// (`7.113.0.203.ip.test`, `spam.example.uri.test`), NXDOMAIN for every other name; or, `silent`, a
// server that never answers (a resolver that is down without refusing: each lookup waits for its
// timeout). Every name asked is kept, to tell what the service looked up.
import { createSocket, type RemoteInfo } from 'node:dgram';

export type DnsServer = { port: number; asked: string[]; stop: () => Promise<void> };

export async function startDnsServer(options: { records?: Record<string, string>; silent?: boolean } = {}): Promise<DnsServer> {
  const records = new Map(Object.entries(options.records ?? {}).map(([name, address]) => [name.toLowerCase(), address]));
  const socket = createSocket('udp4');
  const asked: string[] = [];
  socket.on('message', (query: Buffer, peer: RemoteInfo) => {
    const question = readQuestion(query);
    if (!question) return;
    asked.push(question.name);
    if (options.silent) return;
    const address = question.type === 1 ? records.get(question.name.toLowerCase()) : undefined;
    socket.send(answer(query, question.end, address), peer.port, peer.address);
  });
  await new Promise<void>((resolve) => socket.bind(0, '127.0.0.1', resolve));
  return {
    port: socket.address().port,
    asked,
    stop: () => new Promise<void>((resolve) => socket.close(() => resolve())),
  };
}

/** The first question's name and type, and where it ends; undefined for a packet that is not a query. */
function readQuestion(query: Buffer): { name: string; type: number; end: number } | undefined {
  if (query.length < 12 || (query[2]! & 0x80) !== 0 || query.readUInt16BE(4) < 1) return undefined;
  const labels: string[] = [];
  let at = 12;
  while (at < query.length && query[at] !== 0) {
    const length = query[at]!;
    if (length > 63) return undefined;
    labels.push(query.subarray(at + 1, at + 1 + length).toString('latin1'));
    at += 1 + length;
  }
  if (at + 5 > query.length) return undefined;
  return { name: labels.join('.'), type: query.readUInt16BE(at + 1), end: at + 5 };
}

/** The reply: the query's id and question, one A record when `address` is given, NXDOMAIN otherwise. */
function answer(query: Buffer, questionEnd: number, address: string | undefined): Buffer {
  const header = Buffer.alloc(12);
  query.copy(header, 0, 0, 2);
  // QR, the query's RD, RA; RCODE 3 (NXDOMAIN) when nothing is listed.
  header[2] = 0x80 | (query[2]! & 0x01);
  header[3] = 0x80 | (address ? 0 : 3);
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(address ? 1 : 0, 6);
  const question = query.subarray(12, questionEnd);
  if (!address) return Buffer.concat([header, question]);
  const record = Buffer.alloc(16);
  record.writeUInt16BE(0xc00c, 0); // the name: a pointer to the question's
  record.writeUInt16BE(1, 2); // A
  record.writeUInt16BE(1, 4); // IN
  record.writeUInt32BE(60, 6); // TTL
  record.writeUInt16BE(4, 10);
  address.split('.').forEach((octet, index) => (record[12 + index] = Number(octet)));
  return Buffer.concat([header, question, record]);
}

import { createSocket, type RemoteInfo, type Socket } from 'node:dgram';
import ipaddr from 'ipaddr.js';

const TYPE_A = 1;
const TYPE_AAAA = 28;
const CLASS_IN = 1;
const RCODE_NXDOMAIN = 3;

/** One question the server received. */
export interface DnsQuery {
  name: string;
  type: 'A' | 'AAAA' | number;
}

/**
 * How the server treats queries: `answer` replies at once; `hold` keeps replies until `release()`;
 * `silent` never replies (a dead or black-holed name server).
 */
export type DnsMode = 'answer' | 'hold' | 'silent';

/** A tiny authoritative-looking DNS server on UDP 127.0.0.1, a stand-in for real DNS (an outside service). */
export interface TestDnsServer {
  /** `127.0.0.1:<port>`, for `Resolver#setServers`. */
  server: string;
  /** Every question received, oldest first. */
  queries: DnsQuery[];
  mode: DnsMode;
  /** Resolves once at least `count` questions have been received in total. */
  receivedAtLeast(count: number): Promise<void>;
  /** Number of replies waiting in `hold` mode. */
  held(): number;
  /** Sends every held reply. */
  release(): void;
  close(): Promise<void>;
}

/** Reads the question name at `offset` (no compression in questions from a stub resolver). */
function readQuestion(msg: Buffer): { name: string; type: number; end: number } | undefined {
  let offset = 12;
  const labels: string[] = [];
  while (offset < msg.length) {
    const length = msg[offset] ?? 0;
    offset += 1;
    if (length === 0) break;
    if (length > 63) return undefined;
    labels.push(msg.toString('latin1', offset, offset + length));
    offset += length;
  }
  if (offset + 4 > msg.length) return undefined;
  return { name: labels.join('.').toLowerCase(), type: msg.readUInt16BE(offset), end: offset + 4 };
}

/** Builds the reply: the question copied verbatim, then one record per matching address. */
function reply(
  msg: Buffer,
  question: { type: number; end: number },
  addresses: readonly string[] | undefined,
): Buffer {
  const family = question.type === TYPE_A ? 'ipv4' : question.type === TYPE_AAAA ? 'ipv6' : undefined;
  const matching = (addresses ?? []).filter((a) => family !== undefined && ipaddr.parse(a).kind() === family);
  const header = Buffer.alloc(12);
  header.writeUInt16BE(msg.readUInt16BE(0), 0); // id
  const rd = (msg.readUInt16BE(2) & 0x0100) !== 0 ? 0x0100 : 0;
  header.writeUInt16BE(0x8000 | 0x0400 | rd | 0x0080 | (addresses ? 0 : RCODE_NXDOMAIN), 2); // QR AA RD RA
  header.writeUInt16BE(1, 4);
  header.writeUInt16BE(matching.length, 6);
  const answers = matching.map((address) => {
    const rdata = Buffer.from(ipaddr.parse(address).toByteArray());
    const record = Buffer.alloc(12);
    record.writeUInt16BE(0xc00c, 0); // pointer to the question name
    record.writeUInt16BE(question.type, 2);
    record.writeUInt16BE(CLASS_IN, 4);
    record.writeUInt32BE(60, 6); // TTL
    record.writeUInt16BE(rdata.length, 10);
    return Buffer.concat([record, rdata]);
  });
  return Buffer.concat([header, msg.subarray(12, question.end), ...answers]);
}

/**
 * Starts a DNS server on UDP 127.0.0.1 (random port) answering A and AAAA from `table` (lower-case
 * names): a listed name gets its addresses of the asked family (none: NOERROR with no data), any
 * other name NXDOMAIN.
 */
export async function startDnsServer(table: Record<string, readonly string[]>): Promise<TestDnsServer> {
  const socket: Socket = createSocket('udp4');
  const queries: DnsQuery[] = [];
  const waiters: Array<{ count: number; resolve: () => void }> = [];
  let held: Array<() => void> = [];

  const dns: TestDnsServer = {
    server: '',
    queries,
    mode: 'answer',
    receivedAtLeast(count) {
      if (queries.length >= count) return Promise.resolve();
      return new Promise((resolve) => waiters.push({ count, resolve }));
    },
    held: () => held.length,
    release() {
      const sends = held;
      held = [];
      for (const send of sends) send();
    },
    close: () => new Promise((resolve) => socket.close(() => resolve())),
  };

  socket.on('message', (msg: Buffer, from: RemoteInfo) => {
    const question = msg.length >= 12 ? readQuestion(msg) : undefined;
    if (!question) return;
    const type = question.type === TYPE_A ? 'A' : question.type === TYPE_AAAA ? 'AAAA' : question.type;
    queries.push({ name: question.name, type });
    for (const waiter of waiters.filter((w) => queries.length >= w.count)) {
      waiters.splice(waiters.indexOf(waiter), 1);
      waiter.resolve();
    }
    if (dns.mode === 'silent') return;
    const send = () => socket.send(reply(msg, question, table[question.name]), from.port, from.address);
    if (dns.mode === 'hold') held.push(send);
    else send();
  });

  await new Promise<void>((resolve, reject) => {
    socket.once('error', reject);
    socket.bind(0, '127.0.0.1', () => {
      socket.off('error', reject);
      resolve();
    });
  });
  dns.server = `127.0.0.1:${socket.address().port}`;
  return dns;
}

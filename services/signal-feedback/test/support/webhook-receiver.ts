import { createServer, type IncomingHttpHeaders, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** One request the receiver got. */
export interface ReceivedWebhook {
  path: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The status the receiver answered. */
  answered: number;
}

/** A local webhook receiver: records every POST and answers with the next planned status (then 200). */
export interface WebhookReceiver {
  url: string;
  received: ReceivedWebhook[];
  /** Statuses to answer, in order, before answering 200 again. */
  plan(statuses: number[]): void;
  close(): Promise<void>;
}

/** Starts a {@link WebhookReceiver} on 127.0.0.1 (a free port); its URL ends in `/hooks`. */
export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  const received: ReceivedWebhook[] = [];
  let planned: number[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const answered = planned.shift() ?? 200;
      received.push({
        path: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        answered,
      });
      res.writeHead(answered, { 'content-type': 'text/plain' }).end(answered < 300 ? 'ok' : 'no');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    received,
    plan: (statuses) => {
      planned = [...statuses];
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Webhook } from 'standardwebhooks';
import { createWebhookSender, type WebhookSender } from '../src/index';

// The webhook receiver is an outside service: a local HTTP server stands in for it, answering with the
// status each test sets and recording what it received.

interface Received {
  headers: IncomingMessage['headers'];
  body: string;
}

let server: Server;
let url: string;
let answer: { status: number; delayMs?: number };
let received: Received[];

beforeAll(async () => {
  server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      received.push({ headers: req.headers, body: Buffer.concat(chunks).toString('utf8') });
      const reply = () => res.writeHead(answer.status).end();
      if (answer.delayMs) setTimeout(reply, answer.delayMs).unref();
      else reply();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/hook`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const SECRET = `whsec_${Buffer.alloc(32, 7).toString('base64')}`;
const BODY = JSON.stringify({ type: 'test', data: { n: 1 } });

let sender: WebhookSender;
function makeSender(allowlist: string[], overrides: { timeoutMs?: number } = {}): WebhookSender {
  sender = createWebhookSender({
    policy: { allowlist },
    timeoutMs: overrides.timeoutMs ?? 2_000,
    maxAttempts: 3,
    retryBaseMs: 5_000,
    userAgent: 'test-webhooks/1',
  });
  return sender;
}

beforeEach(() => {
  answer = { status: 204 };
  received = [];
});
afterEach(async () => {
  await sender.close();
});

describe('createWebhookSender', () => {
  it('When the receiver answers 2xx, then the attempt is delivered and carries a Standard Webhooks signature the receiver verifies', async () => {
    const outcome = await makeSender(['127.0.0.1']).send({
      url,
      body: BODY,
      messageId: 'msg_1',
      secret: SECRET,
      attempt: 2,
      headers: { 'x-extra': 'yes' },
    });
    expect(outcome).toEqual({ delivered: true, status: 204 });
    expect(received).toHaveLength(1);
    const got = received[0]!;
    expect(got.body).toBe(BODY);
    expect(got.headers).toMatchObject({
      'content-type': 'application/json',
      'user-agent': 'test-webhooks/1',
      'webhook-id': 'msg_1',
      'x-webhook-attempt': '2',
      'x-extra': 'yes',
    });
    expect(() => new Webhook(SECRET).verify(got.body, got.headers as Record<string, string>)).not.toThrow();
  });

  it('When the key is given as raw bytes, then the signature verifies with the whsec_ form of the same bytes', async () => {
    const raw = Buffer.from('a printable ascii secret of 32 chars', 'utf8');
    await makeSender(['127.0.0.1']).send({ url, body: BODY, messageId: 'msg_2', secret: raw, attempt: 1 });
    const got = received[0]!;
    expect(() =>
      new Webhook(`whsec_${raw.toString('base64')}`).verify(got.body, got.headers as Record<string, string>),
    ).not.toThrow();
  });

  it('When the receiver answers 500, then the attempt fails and the next waits the base doubled per failed attempt', async () => {
    answer = { status: 500 };
    const s = makeSender(['127.0.0.1']);
    const first = await s.send({ url, body: BODY, messageId: 'm', secret: SECRET, attempt: 1 });
    const second = await s.send({ url, body: BODY, messageId: 'm', secret: SECRET, attempt: 2 });
    expect(first).toEqual({
      delivered: false,
      status: 500,
      error: 'receiver answered 500',
      giveUp: false,
      retryInMs: 5_000,
    });
    expect(second).toMatchObject({ delivered: false, giveUp: false, retryInMs: 10_000 });
  });

  it('When the last attempt fails, then the delivery is given up', async () => {
    answer = { status: 302 };
    const outcome = await makeSender(['127.0.0.1']).send({
      url,
      body: BODY,
      messageId: 'm',
      secret: SECRET,
      attempt: 3,
    });
    expect(outcome).toMatchObject({ delivered: false, status: 302, giveUp: true });
  });

  it('When the address is loopback and not allowlisted, then nothing is sent and the delivery is given up at once', async () => {
    const outcome = await makeSender([]).send({
      url,
      body: BODY,
      messageId: 'm',
      secret: SECRET,
      attempt: 1,
    });
    expect(outcome).toMatchObject({ delivered: false, status: null, giveUp: true });
    expect(received).toHaveLength(0);
  });

  it('When the receiver does not answer within the deadline, then the attempt fails without a status and is retried', async () => {
    answer = { status: 204, delayMs: 5_000 };
    const outcome = await makeSender(['127.0.0.1'], { timeoutMs: 200 }).send({
      url,
      body: BODY,
      messageId: 'm',
      secret: SECRET,
      attempt: 1,
    });
    expect(outcome).toMatchObject({ delivered: false, status: null, giveUp: false, retryInMs: 5_000 });
  });
});

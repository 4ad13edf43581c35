import { createHmac } from 'node:crypto';
import { Webhook } from 'standardwebhooks';
import { verifyWebhook, WebhookVerificationError } from '../src/index';

// The receiving side of market-intel's completion webhooks. The sender here signs as the service does
// (services/market-intel/README.md, "Webhooks (market-intel)"): x-service-signature = hex HMAC-SHA256
// of the body keyed with the secret's bytes, and Standard Webhooks with the same bytes as its key.
const secret = 'local-webhook-secret-0123456789abcdef';
const body = JSON.stringify({ jobId: 'job_1', status: 'completed', result: { verdict: 'APPROVED' } });

function sign(raw: string, at = new Date()): Record<string, string> {
  const id = 'msg_abcdefghijklmnopqrstuvwxyz012345';
  return {
    'content-type': 'application/json',
    'x-service-signature': createHmac('sha256', secret).update(raw).digest('hex'),
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(Buffer.from(secret, 'utf8'), { format: 'raw' }).sign(id, at, raw),
  };
}

function codeOf(run: () => unknown): string | undefined {
  try {
    run();
  } catch (error) {
    if (error instanceof WebhookVerificationError) return error.code;
    throw error;
  }
  return undefined;
}

describe('verifyWebhook', () => {
  it('When a delivery is signed both ways with the secret, then its body is returned (plain and fetch Headers)', () => {
    expect(verifyWebhook({ secret, headers: sign(body), body })).toEqual(JSON.parse(body));
    expect(verifyWebhook({ secret, headers: new Headers(sign(body)), body: Buffer.from(body) }).jobId).toBe(
      'job_1',
    );
  });

  it('When the body was changed, then x-service-signature refuses it', () => {
    const headers = sign(body);
    expect(codeOf(() => verifyWebhook({ secret, headers, body: body.replace('APPROVED', 'REJECTED') }))).toBe(
      'bad_signature',
    );
  });

  it('When the secret is another, or the signature is missing or not hex, then it is refused', () => {
    expect(codeOf(() => verifyWebhook({ secret: `${secret}x`, headers: sign(body), body }))).toBe(
      'bad_signature',
    );
    const { 'x-service-signature': _, ...without } = sign(body);
    expect(codeOf(() => verifyWebhook({ secret, headers: without, body }))).toBe('missing_signature');
    expect(
      codeOf(() => verifyWebhook({ secret, headers: { ...sign(body), 'x-service-signature': 'zz' }, body })),
    ).toBe('bad_signature');
  });

  it('When the Standard Webhooks timestamp is ten minutes old (a replay), then it is refused', () => {
    const old = sign(body, new Date(Date.now() - 10 * 60_000));
    expect(codeOf(() => verifyWebhook({ secret, headers: old, body }))).toBe('bad_standard_signature');
  });

  it('When the Standard Webhooks headers are missing, then it is refused unless standardWebhooks is false', () => {
    const headers = { 'x-service-signature': sign(body)['x-service-signature']! };
    expect(codeOf(() => verifyWebhook({ secret, headers, body }))).toBe('missing_signature');
    expect(verifyWebhook({ secret, headers, body, standardWebhooks: false }).status).toBe('completed');
  });

  it('When a correctly signed body is not a webhook body, then it is refused as invalid_body', () => {
    const odd = JSON.stringify({ hello: 'world' });
    expect(codeOf(() => verifyWebhook({ secret, headers: sign(odd), body: odd }))).toBe('invalid_body');
  });
});

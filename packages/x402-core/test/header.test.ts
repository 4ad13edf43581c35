import { Keypair } from '@solana/web3.js';
import { isAppError, type AppError } from '@repo/errors';
import {
  decodePaymentResponse,
  encodePaymentHeader,
  encodePaymentResponse,
  parsePaymentHeader,
  parsePaymentProof,
} from '../src/index';
import { bs58 } from '../src/deps';

const signature = bs58.encode(new Uint8Array(64).fill(7));

function payload(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return {
    x402Version: 1,
    scheme: 'exact',
    network: 'solana',
    payload: { txSignature: signature },
    ...overrides,
  };
}

function base64(value: unknown): string {
  return Buffer.from(JSON.stringify(value), 'utf8').toString('base64');
}

function parseError(value: string, network?: 'solana' | 'solana-devnet'): AppError {
  try {
    parsePaymentHeader(value, network);
  } catch (error) {
    if (isAppError(error)) return error;
    throw error;
  }
  throw new Error('expected parsePaymentHeader to throw');
}

describe('parsePaymentHeader', () => {
  it('When the header is base64 JSON, then the payload is decoded', () => {
    expect(parsePaymentHeader(base64(payload()), 'solana')).toEqual(payload());
  });

  it('When the header is raw JSON, then the payload is decoded', () => {
    expect(
      parsePaymentHeader(` ${JSON.stringify(payload({ network: 'solana-devnet' }))} `, 'solana-devnet')
        .network,
    ).toBe('solana-devnet');
  });

  it('When the header was made by encodePaymentHeader, then it parses back', () => {
    expect(parsePaymentHeader(encodePaymentHeader('solana-devnet', signature)).payload.txSignature).toBe(
      signature,
    );
  });

  it('When the header is garbage, then 400 invalid_payment_header', () => {
    for (const value of [
      'not base64 at all!',
      base64('a string').slice(0, 5),
      '{"x402Version":',
      '',
      '   ',
    ]) {
      const error = parseError(value);
      expect(error.code).toBe('invalid_payment_header');
      expect(error.status).toBe(400);
      expect(error.message).toMatch(/^Invalid X-PAYMENT header: /);
      expect(error.details).toMatchObject({ reason: 'invalid_payload' });
    }
  });

  it('When the version is not 1, then 400 naming x402Version', () => {
    const error = parseError(base64(payload({ x402Version: 2 })));
    expect(error.code).toBe('invalid_payment_header');
    expect(error.message).toContain('x402Version');
    expect(error.details).toEqual({ reason: 'invalid_x402_version' });
  });

  it('When the scheme or network is unknown, then 400', () => {
    expect(parseError(base64(payload({ scheme: 'upto' })))).toMatchObject({
      message: expect.stringContaining('scheme'),
      details: { reason: 'unsupported_scheme' },
    });
    expect(parseError(base64(payload({ network: 'base' })))).toMatchObject({
      message: expect.stringContaining('network'),
      details: { reason: 'invalid_network' },
    });
  });

  it('When the signature does not decode to 64 bytes, then 400', () => {
    for (const txSignature of [
      bs58.encode(new Uint8Array(32).fill(9)),
      bs58.encode(new Uint8Array(65).fill(9)),
      'abc0OIl',
      '',
    ]) {
      const error = parseError(base64(payload({ payload: { txSignature } })));
      expect(error.code).toBe('invalid_payment_header');
      expect(error.details).toMatchObject({ reason: 'invalid_payload' });
    }
  });

  it('When the network differs from the request network, then 400 naming both', () => {
    const error = parseError(base64(payload({ network: 'solana' })), 'solana-devnet');
    expect(error.status).toBe(400);
    expect(error.message).toContain('solana-devnet');
    expect(error.details).toEqual({ reason: 'invalid_network', expected: 'solana-devnet', got: 'solana' });
  });
});

describe('parsePaymentProof', () => {
  const proofError = (value: unknown, network?: 'solana' | 'solana-devnet'): AppError => {
    try {
      parsePaymentProof(base64(value), network, 'PAYMENT-SIGNATURE');
    } catch (error) {
      if (isAppError(error)) return error;
      throw error;
    }
    throw new Error('expected an AppError');
  };
  const v2 = (accepted: Record<string, unknown>): Record<string, unknown> => ({
    x402Version: 2,
    accepted: {
      scheme: 'exact',
      network: 'solana:5eykt4UsFv8P8NJdTREpY1vzqKqZKvdp',
      amount: '100000',
      asset: 'mint',
      payTo: 'wallet',
      maxTimeoutSeconds: 60,
      ...accepted,
    },
    payload: { transaction: 'AQID' },
  });

  it('When a payment is refused, then details.reason is the specification error code', () => {
    expect(proofError({ x402Version: 3, payload: {} }).details).toMatchObject({
      reason: 'invalid_x402_version',
    });
    expect(proofError(v2({ scheme: 'upto' })).details).toMatchObject({ reason: 'unsupported_scheme' });
    expect(proofError(v2({ network: 'eip155:8453' })).details).toMatchObject({ reason: 'invalid_network' });
    expect(proofError(v2({}), 'solana-devnet').details).toMatchObject({ reason: 'invalid_network' });
    expect(proofError(v2({ amount: 'ten' })).details).toMatchObject({ reason: 'invalid_payload' });
    expect(proofError(payload({ scheme: 'upto' })).details).toMatchObject({ reason: 'unsupported_scheme' });
    expect(proofError([1, 2]).details).toMatchObject({ reason: 'invalid_payload' });
    for (const error of [proofError(v2({ scheme: 'upto' })), proofError([1])])
      expect(error.message).toMatch(/^Invalid PAYMENT-SIGNATURE header: /);
  });
});

describe('X-PAYMENT-RESPONSE', () => {
  it('When a payment response is encoded, then it decodes to the same object', () => {
    const response = {
      success: true,
      transaction: signature,
      network: 'solana' as const,
      payer: Keypair.generate().publicKey.toBase58(),
    };
    expect(decodePaymentResponse(encodePaymentResponse(response))).toEqual(response);
  });
});

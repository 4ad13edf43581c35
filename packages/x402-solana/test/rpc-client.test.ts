import { PaymentVerificationError } from '@repo/x402-core';
import { buildSignature } from '@repo/x402-core/testing';
import { RpcResponseError, RpcTransportError, SolanaPaymentVerifier } from '../src/index';
import { json, stubRpc } from './support/stub-rpc';

const ASSET = 'Gh9ZwEmdLJ8DscKNTkTqPbNwLNNBjuSzaG9Vp2KGtKJr';
const PAY_TO = '9xQeWvG816bUx9EPjHmaT23yvVM2ZWbrrpZb9PusVFin';

async function verifyAgainst(
  url: string,
  options: { rpcTimeoutMs?: number } = {},
): Promise<PaymentVerificationError> {
  const verifier = new SolanaPaymentVerifier(
    { network: 'solana', rpcUrl: url, asset: ASSET, payTo: PAY_TO },
    { fetchAttempts: 2, fetchDelayMs: 10, ...options },
  );
  try {
    await verifier.verify(buildSignature(), 100_000n);
  } catch (error) {
    if (error instanceof PaymentVerificationError) return error;
    throw error;
  } finally {
    await verifier.close();
  }
  throw new Error('expected a PaymentVerificationError');
}

describe('the verifier’s JSON-RPC client', () => {
  it('When the node does not know the transaction, then not_found after each attempt asked getTransaction with the json encoding on the URL path', async () => {
    const rpc = await stubRpc((_request, res) => json(res, 200, '{"jsonrpc":"2.0","id":1,"result":null}'));
    try {
      const error = await verifyAgainst(rpc.url);
      expect(error.reason).toBe('not_found');
      expect(rpc.requests).toHaveLength(2);
      expect(rpc.requests[0]).toMatchObject({
        url: '/devnet?key=k',
        method: 'getTransaction',
        params: [
          expect.any(String),
          { encoding: 'json', commitment: 'confirmed', maxSupportedTransactionVersion: 0 },
        ],
      });
    } finally {
      await rpc.close();
    }
  });

  it.each([
    ['a body that is not JSON', 200, 'not json'],
    [
      'a result of the wrong shape',
      200,
      '{"jsonrpc":"2.0","id":1,"result":{"slot":"7","meta":null,"transaction":{}}}',
    ],
    [
      'instruction data that is not base58',
      200,
      JSON.stringify({
        jsonrpc: '2.0',
        id: 1,
        result: {
          slot: 7,
          blockTime: 1,
          meta: { err: null },
          transaction: {
            message: { accountKeys: [], instructions: [{ programIdIndex: 0, accounts: [], data: '0OIl' }] },
          },
        },
      }),
    ],
    ['no result', 200, '{"jsonrpc":"2.0","id":1}'],
  ])(
    'When the node answers %s, then rpc_unavailable caused by a malformed RpcResponseError',
    async (_name, status, body) => {
      const rpc = await stubRpc((_request, res) => json(res, status, body));
      try {
        const error = await verifyAgainst(rpc.url);
        expect(error.reason).toBe('rpc_unavailable');
        expect(error.cause).toBeInstanceOf(RpcResponseError);
        expect(error.cause).toMatchObject({ kind: 'malformed' });
      } finally {
        await rpc.close();
      }
    },
  );

  it('When the node answers a JSON-RPC error or an HTTP error, then rpc_unavailable with its code', async () => {
    const rpcError = await stubRpc((_request, res) =>
      json(res, 200, '{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"Node is behind"}}'),
    );
    const httpError = await stubRpc((_request, res) => json(res, 429, '{"error":"slow down"}'));
    try {
      expect((await verifyAgainst(rpcError.url)).cause).toMatchObject({
        name: 'RpcResponseError',
        kind: 'rpc',
        code: -32005,
      });
      expect((await verifyAgainst(httpError.url)).cause).toMatchObject({
        name: 'RpcResponseError',
        kind: 'http',
        code: 429,
      });
    } finally {
      await rpcError.close();
      await httpError.close();
    }
  });

  it('When the node does not answer within rpcTimeoutMs, then rpc_unavailable caused by an RpcTransportError', async () => {
    const silent = await stubRpc(() => undefined);
    try {
      const started = Date.now();
      const error = await verifyAgainst(silent.url, { rpcTimeoutMs: 200 });
      expect(error.reason).toBe('rpc_unavailable');
      expect(error.cause).toBeInstanceOf(RpcTransportError);
      expect((error.cause as RpcTransportError).code).toBe('UND_ERR_HEADERS_TIMEOUT');
      // The node never answers: without the timeout this would wait for undici's 300 s default; the
      // bound leaves a loaded 2-core machine room for the verifier's bounded retries.
      expect(Date.now() - started).toBeLessThan(10_000);
    } finally {
      await silent.close();
    }
  });

  it('When nothing listens, then rpc_unavailable caused by an RpcTransportError (ECONNREFUSED)', async () => {
    const error = await verifyAgainst('http://127.0.0.1:1');
    expect(error.reason).toBe('rpc_unavailable');
    expect(error.cause).toMatchObject({
      name: 'RpcTransportError',
      code: 'ECONNREFUSED',
      url: 'http://127.0.0.1:1',
    });
  });
});

import { request as httpRequest } from 'node:http';
import { Keypair } from '@solana/web3.js';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import { SIGN_IN_WITH_X, type SIWxExtension } from '@x402/extensions/sign-in-with-x';
import { PrismaPaymentLedger, PrismaSignInRecords } from '@repo/x402-ledger';
import { PgSqlClient } from '@repo/x402-ledger/testing';
import { ExactSvmSettler, SolanaPaymentVerifier } from '@repo/x402-solana';
import type { PaymentGateway } from '../src/index';
import { buildPaidApp, listen, type HandlerRuns } from './support/app';

// The sign-in-with-x challenge of the middleware (README, "Sign-in-with-x"): declared fresh in every
// PAYMENT-REQUIRED, bound to the request's origin when no public base URL is set, and never a 500
// for a hostile Host or a malformed proof. (market-intel's test/sign-in-with-x.test.ts signs in for
// real against the ledger.)
const MINT = 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v';
let db: PgSqlClient;
let server: { url: string; close: () => Promise<void> };
const runs: HandlerRuns = { gaps: 0, keywords: 0, flaky: 0 };

beforeAll(async () => {
  db = new PgSqlClient();
  // Nothing here reaches the RPC: only unpaid requests and refused proofs are sent.
  const rpcUrl = 'http://127.0.0.1:9';
  const gateway: PaymentGateway = {
    ledger: new PrismaPaymentLedger(db),
    verifiers: {
      solana: new SolanaPaymentVerifier({
        network: 'solana',
        rpcUrl,
        asset: MINT,
        payTo: Keypair.generate().publicKey.toBase58(),
      }),
    },
    settlers: {
      solana: new ExactSvmSettler({
        network: 'solana',
        rpcUrl,
        asset: MINT,
        payTo: Keypair.generate().publicKey.toBase58(),
        feePayerSecretKey: Keypair.generate().secretKey,
      }),
    },
    signInWithX: {
      records: new PrismaSignInRecords(db),
      accessWindowSeconds: { sync: 600, async: 600 },
      requiredForReplay: true,
    },
  };
  server = await listen(buildPaidApp(gateway, runs));
});

afterAll(async () => {
  await server?.close();
  await db?.close();
});

function challengeOf(res: Response): SIWxExtension | undefined {
  const header = res.headers.get('payment-required');
  return header
    ? (decodePaymentRequiredHeader(header).extensions?.[SIGN_IN_WITH_X] as SIWxExtension)
    : undefined;
}

describe('the sign-in-with-x challenge', () => {
  it('When a 402 is sent, then its PAYMENT-REQUIRED carries a fresh challenge on the request origin', async () => {
    const first = challengeOf(await fetch(`${server.url}/api/v1/scout/gaps?limit=2`));
    const second = challengeOf(await fetch(`${server.url}/api/v1/scout/gaps?limit=2`));
    expect(first?.info).toMatchObject({
      domain: new URL(server.url).host,
      uri: `${server.url}/api/v1/scout/gaps?limit=2`,
      version: '1',
    });
    expect(second?.info.nonce).not.toBe(first?.info.nonce);
  });

  it('When the Host header makes no URL, then the 402 has no challenge and is not a 500', async () => {
    const { port } = new URL(server.url);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(
        { host: '127.0.0.1', port, path: '/api/v1/scout/gaps', headers: { host: 'exa mple' } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(402);
  });

  it('When a malformed proof is sent, then it is a 402 naming why, with a new challenge', async () => {
    const res = await fetch(`${server.url}/api/v1/scout/gaps`, { headers: { [SIGN_IN_WITH_X]: 'e30=' } });
    expect(res.status).toBe(402);
    expect(challengeOf(res)?.info.nonce).toMatch(/^[0-9a-f]{32}$/);
    expect(await res.json()).toMatchObject({ details: { reason: 'invalid_siwx_header' } });
    expect(runs.gaps).toBe(0);
  });
});

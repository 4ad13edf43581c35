import { Keypair } from '@solana/web3.js';
import type { VerifiedPayment } from '@repo/x402-core';
import { buildSignature } from '@repo/x402-core/testing';
import type { ClaimRequest, StoredResponse } from '../types';

/** A claim request for a fresh signature. */
export function buildClaimRequest(overrides: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    signature: buildSignature(),
    network: 'solana',
    endpoint: 'GET /api/v1/scout/gaps',
    kind: 'sync',
    ...overrides,
  };
}

/** A verified payment as the verifier returns it. */
export function buildVerifiedPayment(overrides: Partial<VerifiedPayment> = {}): VerifiedPayment {
  return {
    signature: buildSignature(),
    network: 'solana',
    payer: Keypair.generate().publicKey.toBase58(),
    amountAtomic: 100000n,
    asset: Keypair.generate().publicKey.toBase58(),
    payTo: Keypair.generate().publicKey.toBase58(),
    slot: 42,
    blockTime: new Date(Math.floor(Date.now() / 1000) * 1000),
    rpcMs: 3,
    ...overrides,
  };
}

/** A stored JSON answer. */
export function buildStoredResponse(body: unknown = { gaps: [], count: 0 }): StoredResponse {
  const text = JSON.stringify(body);
  return {
    status: 200,
    headers: {
      'content-type': 'application/json; charset=utf-8',
      'content-length': String(Buffer.byteLength(text)),
    },
    body: text,
  };
}

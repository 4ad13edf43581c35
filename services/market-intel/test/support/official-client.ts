import { Connection, PublicKey, type Keypair } from '@solana/web3.js';
import { createKeyPairSignerFromBytes } from '@solana/kit';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import type { X402Network } from '@repo/schemas';
import { CAIP2_NETWORKS } from '@repo/x402-core';
import { associatedTokenAccountOf } from '@repo/x402-solana';
import type { Harness } from './harness';

type Caip2 = `${string}:${string}`;

/**
 * The official x402 v2 client (`x402Client` + `@x402/svm`'s exact scheme) for `payer`, on both networks
 * of the harness's ledger, up to 30 USDC a payment.
 */
export async function officialClient(h: Harness, payer: Keypair): Promise<x402Client> {
  const signer = await createKeyPairSignerFromBytes(payer.secretKey);
  const client = new x402Client();
  for (const network of ['solana', 'solana-devnet'] as const) {
    const caip2 = CAIP2_NETWORKS[network] as Caip2;
    client.register(caip2, new ExactSvmScheme(signer, { rpcUrl: h.rpcUrls[network] }));
  }
  // The test mint is not one of the client's default assets; compute jobs cost 15 and 25 USDC, over
  // the client's default $1 per payment.
  client.setSpendControls({
    allowedAssets: (['solana', 'solana-devnet'] as const).map((network) => ({
      network: CAIP2_NETWORKS[network] as Caip2,
      asset: h.ledger.networks[network].mint,
      maxAmountPerPayment: '30000000',
    })),
  });
  return client;
}

/** `fetch` that pays 402s with {@link officialClient} (`@x402/fetch`), as its documentation shows. */
export async function officialFetch(h: Harness, payer: Keypair): Promise<typeof fetch> {
  return wrapFetchWithPayment(fetch, await officialClient(h, payer));
}

/** What {@link balances} reads: USDC in atomic units, SOL in lamports. */
export interface Balances {
  payerUsdc: bigint;
  merchantUsdc: bigint;
  payerSol: number;
  feePayerSol: number;
}

/** USDC of `payer` (default the agent) and the merchant, SOL of `payer` and the fee payer, on `network`. */
export async function balances(
  h: Harness,
  network: X402Network,
  payer: Keypair = h.agent,
): Promise<Balances> {
  const info = h.ledger.networks[network];
  const connection = new Connection(info.rpcUrl, 'confirmed');
  const usdc = async (owner: string) =>
    BigInt(
      (await connection.getTokenAccountBalance(new PublicKey(associatedTokenAccountOf(owner, info.mint))))
        .value.amount,
    );
  return {
    payerUsdc: await usdc(payer.publicKey.toBase58()),
    merchantUsdc: await usdc(info.merchantOwner),
    payerSol: await connection.getBalance(payer.publicKey),
    feePayerSol: await connection.getBalance(new PublicKey(h.ledger.feePayer.publicKey)),
  };
}

import { Connection, Keypair, PublicKey } from '@solana/web3.js';
import { createKeyPairSignerFromBytes } from '@solana/kit';
import { wrapFetchWithPayment, x402Client } from '@x402/fetch';
import type { PaymentPayload, PaymentRequired } from '@x402/core/types';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import type { X402Network } from '@repo/schemas';
import { CAIP2_NETWORKS, encodeBase64Json } from '@repo/x402-core';
import { associatedTokenAccountOf } from '@repo/x402-solana';
import { startReplica, type Harness, type Replica } from './harness';
import { RpcInterceptor } from './rpc-interceptor';

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

/**
 * A fresh wallet funded by the ledger with USDC (1000 USDC) and SOL (which the official scheme never
 * spends) on `network`.
 */
export async function fundedWallet(h: Harness, network: X402Network = 'solana'): Promise<Keypair> {
  const payer = Keypair.generate();
  await h.ledger.fund(payer.publicKey.toBase58(), { network });
  return payer;
}

/** The `PaymentRequired` (the `PAYMENT-REQUIRED` header) of `GET url`'s 402. */
export async function paymentRequired(url: string): Promise<PaymentRequired> {
  const res = await fetch(url);
  if (res.status !== 402) throw new Error(`GET ${url} answered ${res.status}, not 402`);
  const header = res.headers.get('payment-required') ?? '';
  return JSON.parse(Buffer.from(header, 'base64').toString('utf8')) as PaymentRequired;
}

/** What the official client pays `GET url` with, as `payer` (nothing is sent). */
export async function officialPayload(h: Harness, url: string, payer: Keypair): Promise<PaymentPayload> {
  return (await officialClient(h, payer)).createPaymentPayload(await paymentRequired(url));
}

/** `GET url` paid with `payload` in `PAYMENT-SIGNATURE`. */
export function sendPayment(url: string, payload: PaymentPayload): Promise<Response> {
  return fetch(url, { headers: { 'PAYMENT-SIGNATURE': encodeBase64Json(payload) } });
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

/**
 * A replica of `h`'s market-intel whose `solana` RPC calls (verification and settlement) go through an
 * {@link RpcInterceptor}, so a test can count or hold them; `config` overrides the harness's.
 */
export async function interceptedReplica(
  h: Harness,
  instance: string,
  config: Partial<Harness['config']> = {},
): Promise<{ rpc: RpcInterceptor; replica: Replica; close(): Promise<void> }> {
  const rpc = await RpcInterceptor.start(h.rpcUrls.solana);
  const replica = await startReplica({
    ...h.config,
    SOLANA_RPC_URL: rpc.url,
    INSTANCE_ID: `test-${instance}-${process.pid}`,
    ...config,
  });
  return {
    rpc,
    replica,
    async close() {
      await replica.close();
      await rpc.close();
    },
  };
}

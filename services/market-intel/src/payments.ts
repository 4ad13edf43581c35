import type { X402Network } from '@repo/schemas';
import { PrismaPaymentLedger, requirePayment, SolanaPaymentVerifier, type PaymentGateway } from '@repo/x402';
import type { MarketIntelConfig } from './config';
import type { Db } from './data/prisma';
import type { PaymentGate } from './routes/data-api';

/**
 * Builds the x402 payment gateway from the configuration: one verifier per configured network
 * (`solana` always, `solana-devnet` when its mint and merchant account are set) and the Postgres
 * payment ledger (table `x402_payments`); `close()` releases the RPC connection pools.
 */
export function createPaymentGateway(
  config: Pick<
    MarketIntelConfig,
    | 'SOLANA_RPC_URL'
    | 'USDC_MINT'
    | 'MERCHANT_TOKEN_ACCOUNT'
    | 'SOLANA_DEVNET_RPC_URL'
    | 'USDC_MINT_DEVNET'
    | 'MERCHANT_TOKEN_ACCOUNT_DEVNET'
    | 'PAYMENT_FRESHNESS_SECONDS'
    | 'PUBLIC_BASE_URL'
  >,
  db: Db,
): PaymentGateway & { close(): Promise<void> } {
  const options = { freshnessWindowSeconds: config.PAYMENT_FRESHNESS_SECONDS };
  const verifiers: Partial<Record<X402Network, SolanaPaymentVerifier>> = {
    solana: new SolanaPaymentVerifier(
      {
        network: 'solana',
        rpcUrl: config.SOLANA_RPC_URL,
        asset: config.USDC_MINT,
        payTo: config.MERCHANT_TOKEN_ACCOUNT,
      },
      options,
    ),
  };
  if (config.USDC_MINT_DEVNET && config.MERCHANT_TOKEN_ACCOUNT_DEVNET) {
    verifiers['solana-devnet'] = new SolanaPaymentVerifier(
      {
        network: 'solana-devnet',
        rpcUrl: config.SOLANA_DEVNET_RPC_URL,
        asset: config.USDC_MINT_DEVNET,
        payTo: config.MERCHANT_TOKEN_ACCOUNT_DEVNET,
      },
      options,
    );
  }
  return {
    ledger: new PrismaPaymentLedger(db),
    verifiers,
    publicBaseUrl: config.PUBLIC_BASE_URL,
    /** Closes the verifiers' RPC connection pools. */
    async close() {
      await Promise.all(Object.values(verifiers).map((v) => v.close()));
    },
  };
}

/**
 * The payment gate of the app: each paid route gets `requirePayment` with its price.
 * @param gateway from {@link createPaymentGateway}
 * @param maxTimeoutSeconds advertised `maxTimeoutSeconds`
 */
export function paymentGate(gateway: PaymentGateway, maxTimeoutSeconds: number): PaymentGate {
  return (route) =>
    requirePayment({
      ...gateway,
      amountAtomic: route.amountAtomic,
      description: route.description,
      endpoint: route.endpoint,
      mimeType: 'application/json',
      maxTimeoutSeconds,
    });
}

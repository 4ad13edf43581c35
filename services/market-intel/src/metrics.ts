import { Counter, Histogram } from 'prom-client';
import { createMetrics, type ServiceMetrics } from '@repo/service-kit';
import type { PaymentEventListener } from '@repo/x402';

/** market-intel's metrics: the shared HTTP ones plus x402 payment outcomes and RPC time. */
export interface MarketIntelMetrics extends ServiceMetrics {
  /** Feeds `x402_payments_total` and `x402_verification_rpc_seconds` from the payment gateway. */
  onPaymentEvent: PaymentEventListener;
}

/** Creates market-intel's registry (`service="market-intel"`). */
export function createMarketIntelMetrics(): MarketIntelMetrics {
  const base = createMetrics('market-intel');
  const payments = new Counter({
    name: 'x402_payments_total',
    help: 'x402 payment events: challenged, verified, rejected (by reason) and replayed',
    labelNames: ['type', 'reason', 'network', 'endpoint'] as const,
    registers: [base.registry],
  });
  const rpc = new Histogram({
    name: 'x402_verification_rpc_seconds',
    help: 'Time spent in Solana RPC calls while verifying one payment, in seconds',
    labelNames: ['network'] as const,
    buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    registers: [base.registry],
  });
  return {
    ...base,
    onPaymentEvent(event) {
      payments.inc({ type: event.type, reason: event.reason ?? '', network: event.network, endpoint: event.endpoint });
      if (event.rpcMs !== undefined) rpc.observe({ network: event.network }, event.rpcMs / 1000);
    },
  };
}

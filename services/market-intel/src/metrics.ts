import type { Broker } from '@repo/queue';
import { COMPUTE_TOPOLOGY } from '@repo/compute';
import { cachedFor, createMetrics, type ServiceMetrics } from '@repo/service-kit';
import { PAYMENT_VERIFICATION_REASONS } from '@repo/x402-core';
import type { PaymentEventListener } from '@repo/x402-express';
import type { RpcCallEvent } from '@repo/x402-solana';
import type { ScanObserver } from './data/scans';

/**
 * Every value the `reason` label of `x402_payments_total` can take: the verification reasons, the
 * refusals before verification, and `other` for anything unforeseen (so the label set stays bounded).
 */
export const PAYMENT_REJECTION_REASONS: ReadonlySet<string> = new Set([
  ...PAYMENT_VERIFICATION_REASONS,
  'invalid_payment_header',
  'payment_reused',
  'payment_conflict',
  'busy',
  'rate_limited',
  'scheme_refused',
  'settlement_refused',
  'other',
]);

/** How long scrape-time lookups (job counts, queue depths) are reused between scrapes, in milliseconds. */
const SCRAPE_CACHE_MS = 1000;

/** market-intel's metrics: the shared HTTP ones plus x402 payment outcomes and RPC time. */
export interface MarketIntelMetrics extends ServiceMetrics {
  /** Feeds `x402_payments_total` and `x402_verification_rpc_seconds` from the payment gateway. */
  onPaymentEvent: PaymentEventListener;
  /** Counts a created compute job (`compute_jobs_created_total`). */
  onJobCreated(kind: 'forge' | 'prove'): void;
  /**
   * Scout scan counters: `scout_scans_started_total{sector}`, `scout_scans_finished_total{sector,status,reported}`,
   * `scout_items_stored_total{sector}` (new items) and `scout_source_fetches_total{sector,status}`
   * (ok, not_modified, failed). Sectors come from the sources file, so the label set is bounded.
   */
  scans: ScanObserver;
  /** Counts an applied runner event (`compute_job_events_total`). */
  onJobEvent(type: string, applied: boolean): void;
  /**
   * Adds the scrape-time gauges `compute_jobs` (by status), `compute_outbox_pending` and
   * `rabbitmq_queue_messages` (ready messages per compute queue, by `checkQueue`); job counts and
   * queue depths are reused for 1 s between scrapes.
   */
  observeCompute(sources: {
    countByStatus(): Promise<Record<string, number>>;
    outboxPending(): Promise<number>;
    broker: Broker;
  }): void;
  /** Sets `x402_fee_payer_lamports{network}`, the fee payer's last read SOL balance. */
  onFeePayerBalance(network: string, lamports: bigint): void;
  /** Counts a payment verifier's RPC call, or one it avoided (`x402_rpc_calls_total`). */
  onRpcCall(call: RpcCallEvent): void;
  /**
   * Counts a refund event (`x402_refunds_total{network,outcome}`): `queued` (a paid job failed on our
   * side), `sent` (a refund transaction handed to the RPC), `confirmed` (on chain, final), `retried`
   * (an attempt failed on chain or expired, a new one will be built), `send_failed` (the RPC refused
   * or could not be reached; the same transaction is tried again), `unclaimable` (held, never sent: the
   * account the payment came from is gone or changed; README, "Refunds").
   */
  onRefund(
    network: string,
    outcome: 'queued' | 'sent' | 'confirmed' | 'retried' | 'send_failed' | 'unclaimable',
  ): void;
  /**
   * Adds the scrape-time gauge `x402_refunds_pending{network}` (refunds not confirmed yet), reused for
   * 1 s between scrapes.
   */
  observeRefunds(countPending: () => Promise<Partial<Record<string, number>>>): void;
}

/** Creates market-intel's registry (`service="market-intel"`). */
export function createMarketIntelMetrics(): MarketIntelMetrics {
  const base = createMetrics('market-intel');
  const payments = base.counter(
    'x402_payments_total',
    'x402 payment events: challenged, verified, rejected (by reason) and replayed',
    ['type', 'reason', 'network', 'endpoint'],
  );
  const rpc = base.histogram(
    'x402_verification_rpc_seconds',
    'Time spent in Solana RPC calls while verifying one payment, in seconds',
    [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    ['network'],
  );
  const feePayer = base.gauge(
    'x402_fee_payer_lamports',
    'SOL balance of the official-scheme fee payer, in lamports, by network (read every minute)',
    ['network'],
  );
  const rpcCalls = base.counter(
    'x402_rpc_calls_total',
    'Payment verification RPC calls by network, method and outcome (found, not_found, error), and calls avoided (cached_not_found, short_circuit)',
    ['network', 'method', 'outcome'],
  );
  const refunds = base.counter(
    'x402_refunds_total',
    'Refunds of failed paid jobs, by network and outcome (queued, sent, confirmed, retried, send_failed, unclaimable)',
    ['network', 'outcome'],
  );
  const created = base.counter('compute_jobs_created_total', 'Paid compute jobs created, by pipeline', [
    'kind',
  ]);
  const events = base.counter(
    'compute_job_events_total',
    'Runner events consumed, by type and whether they changed a job (duplicates do not)',
    ['type', 'applied'],
  );
  const scansStarted = base.counter('scout_scans_started_total', 'Scout scans started, by sector', [
    'sector',
  ]);
  const scansFinished = base.counter(
    'scout_scans_finished_total',
    'Scout scans ended, by sector, status and whether a report was stored',
    ['sector', 'status', 'reported'],
  );
  const itemsStored = base.counter(
    'scout_items_stored_total',
    'New items stored by scout scans (items seen before are not counted), by sector',
    ['sector'],
  );
  const sourceFetches = base.counter(
    'scout_source_fetches_total',
    'Source fetches of scout scans, by sector and outcome (ok, not_modified, failed)',
    ['sector', 'status'],
  );
  return {
    ...base,
    scans: {
      onStarted(sector) {
        scansStarted.inc({ sector });
      },
      onFetched(sector, newItems, sources) {
        itemsStored.inc({ sector }, newItems);
        for (const source of sources) sourceFetches.inc({ sector, status: source.status });
      },
      onFinished(sector, status, reported) {
        scansFinished.inc({ sector, status, reported: String(reported) });
      },
    },
    onJobCreated(kind) {
      created.inc({ kind });
    },
    onRpcCall({ network, method, outcome }) {
      rpcCalls.inc({ network, method, outcome });
    },
    onJobEvent(type, applied) {
      events.inc({ type, applied: String(applied) });
    },
    observeCompute(sources) {
      const countByStatus = cachedFor(SCRAPE_CACHE_MS, () => sources.countByStatus());
      const queueNames = [
        COMPUTE_TOPOLOGY.queues.starts,
        COMPUTE_TOPOLOGY.queues.steps,
        COMPUTE_TOPOLOGY.queues.jobEvents,
        COMPUTE_TOPOLOGY.queues.jobStarts,
        COMPUTE_TOPOLOGY.queues.deadLetter,
      ];
      const queueDepths = cachedFor(SCRAPE_CACHE_MS, () =>
        sources.broker.withChannel(async (channel) => {
          const depths: Record<string, number> = {};
          for (const queue of queueNames) depths[queue] = (await channel.checkQueue(queue)).messageCount;
          return depths;
        }),
      );
      // Without the database the last counts stay (a dropped series would read as zero jobs).
      base.scrapedGauge('compute_jobs', 'Compute jobs by status', 'status', async () => {
        const counts = await countByStatus();
        return Object.fromEntries(
          ['pending', 'running', 'completed', 'failed'].map((status) => [status, counts[status] ?? 0]),
        );
      });
      base.scrapedGauge(
        'compute_outbox_pending',
        'Messages committed but not yet confirmed by RabbitMQ',
        undefined,
        () => sources.outboxPending().catch(() => 0),
      );
      base.scrapedGauge(
        'rabbitmq_queue_messages',
        'Ready messages in each compute queue (queue depth)',
        'queue',
        () => (sources.broker.isConnected() ? queueDepths() : undefined),
      );
    },
    onRefund(network, outcome) {
      refunds.inc({ network, outcome });
    },
    observeRefunds(countPending) {
      const counts = cachedFor(SCRAPE_CACHE_MS, countPending);
      base.scrapedGauge(
        'x402_refunds_pending',
        'Refunds queued and not confirmed on chain yet, by network',
        'network',
        async () => {
          const pending = await counts();
          return { solana: pending.solana ?? 0, 'solana-devnet': pending['solana-devnet'] ?? 0 };
        },
      );
    },
    onFeePayerBalance(network, lamports) {
      feePayer.set({ network }, Number(lamports));
    },
    onPaymentEvent(event) {
      payments.inc({
        type: event.type,
        reason:
          event.reason === undefined
            ? ''
            : PAYMENT_REJECTION_REASONS.has(event.reason)
              ? event.reason
              : /^(invalid_exact_svm|settlement|transaction_failed|duplicate_settlement)/.test(event.reason)
                ? 'settlement_refused'
                : 'other',
        network: event.network,
        endpoint: event.endpoint,
      });
      if (event.rpcMs !== undefined) rpc.observe({ network: event.network }, event.rpcMs / 1000);
    },
  };
}

import type { Broker } from '@repo/queue';
import { COMPUTE_TOPOLOGY } from '@repo/compute';
import { cachedFor, createMetrics, SCRAPE_CACHE_MS, type ServiceMetrics } from '@repo/service-kit';
import { PAYMENT_VERIFICATION_REASONS } from '@repo/x402-core';
import type { PaymentEventListener } from '@repo/x402-express';
import type { RpcCallEvent } from '@repo/x402-solana';
import type { ScanObserver } from './data/scans';

/**
 * Every value the `reason` label of `x402_payments_total` can take: the verification reasons, the
 * refusals before verification, the refusals of a replay's sign-in (any `invalid_siwx_*` counted as
 * `invalid_siwx`), and `other` for anything unforeseen (so the label set stays bounded).
 */
export const PAYMENT_REJECTION_REASONS: ReadonlySet<string> = new Set([
  ...PAYMENT_VERIFICATION_REASONS,
  'invalid_payment_header',
  'payment_reused',
  'payment_conflict',
  'payment_identifier_conflict',
  'busy',
  'rate_limited',
  'scheme_refused',
  'settlement_refused',
  'siwx_required',
  'siwx_not_payer',
  'siwx_rate_limited',
  'invalid_siwx',
  'other',
]);

/** The `reason` label of a payment event's reason ({@link PAYMENT_REJECTION_REASONS}). */
function reasonLabel(reason: string | undefined): string {
  if (reason === undefined) return '';
  if (PAYMENT_REJECTION_REASONS.has(reason)) return reason;
  if (/^(invalid_exact_svm|settlement|transaction_failed|duplicate_settlement)/.test(reason))
    return 'settlement_refused';
  return reason.startsWith('invalid_siwx') ? 'invalid_siwx' : 'other';
}

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
  const { series, ...base } = createMetrics('market-intel', {
    x402_payments_total: {
      type: 'counter',
      help: 'x402 payment events: challenged, verified, rejected (by reason), replayed, replay_refused (by reason) and signed_in',
      labels: ['type', 'reason', 'network', 'endpoint'],
    },
    x402_verification_rpc_seconds: {
      type: 'histogram',
      help: 'Time spent in Solana RPC calls while verifying one payment, in seconds',
      labels: ['network'],
      buckets: [0.0005, 0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.25, 0.5, 1, 2.5],
    },
    x402_fee_payer_lamports: {
      type: 'gauge',
      help: 'SOL balance of the official-scheme fee payer, in lamports, by network (read every minute)',
      labels: ['network'],
    },
    x402_rpc_calls_total: {
      type: 'counter',
      help: 'Payment verification RPC calls by network, method and outcome (found, not_found, error), and calls avoided (cached_not_found, short_circuit)',
      labels: ['network', 'method', 'outcome'],
    },
    x402_refunds_total: {
      type: 'counter',
      help: 'Refunds of failed paid jobs, by network and outcome (queued, sent, confirmed, retried, send_failed, unclaimable)',
      labels: ['network', 'outcome'],
    },
    compute_jobs_created_total: {
      type: 'counter',
      help: 'Paid compute jobs created, by pipeline',
      labels: ['kind'],
    },
    compute_job_events_total: {
      type: 'counter',
      help: 'Runner events consumed, by type and whether they changed a job (duplicates do not)',
      labels: ['type', 'applied'],
    },
    scout_scans_started_total: {
      type: 'counter',
      help: 'Scout scans started, by sector',
      labels: ['sector'],
    },
    scout_scans_finished_total: {
      type: 'counter',
      help: 'Scout scans ended, by sector, status and whether a report was stored',
      labels: ['sector', 'status', 'reported'],
    },
    scout_items_stored_total: {
      type: 'counter',
      help: 'New items stored by scout scans (items seen before are not counted), by sector',
      labels: ['sector'],
    },
    scout_source_fetches_total: {
      type: 'counter',
      help: 'Source fetches of scout scans, by sector and outcome (ok, not_modified, failed)',
      labels: ['sector', 'status'],
    },
  });
  return {
    ...base,
    scans: {
      onStarted(sector) {
        series.scout_scans_started_total.inc({ sector });
      },
      onFetched(sector, newItems, sources) {
        series.scout_items_stored_total.inc({ sector }, newItems);
        for (const source of sources)
          series.scout_source_fetches_total.inc({ sector, status: source.status });
      },
      onFinished(sector, status, reported) {
        series.scout_scans_finished_total.inc({ sector, status, reported: String(reported) });
      },
    },
    onJobCreated(kind) {
      series.compute_jobs_created_total.inc({ kind });
    },
    onRpcCall({ network, method, outcome }) {
      series.x402_rpc_calls_total.inc({ network, method, outcome });
    },
    onJobEvent(type, applied) {
      series.compute_job_events_total.inc({ type, applied: String(applied) });
    },
    observeCompute(sources) {
      const countByStatus = cachedFor(SCRAPE_CACHE_MS, () => sources.countByStatus());
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
      base.observeQueueDepths(
        sources.broker,
        [
          COMPUTE_TOPOLOGY.queues.starts,
          COMPUTE_TOPOLOGY.queues.steps,
          COMPUTE_TOPOLOGY.queues.jobEvents,
          COMPUTE_TOPOLOGY.queues.jobStarts,
          COMPUTE_TOPOLOGY.queues.deadLetter,
        ],
        'Ready messages in each compute queue (queue depth)',
      );
    },
    onRefund(network, outcome) {
      series.x402_refunds_total.inc({ network, outcome });
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
      series.x402_fee_payer_lamports.set({ network }, Number(lamports));
    },
    onPaymentEvent(event) {
      series.x402_payments_total.inc({
        type: event.type,
        reason: reasonLabel(event.reason),
        network: event.network,
        endpoint: event.endpoint,
      });
      if (event.rpcMs !== undefined)
        series.x402_verification_rpc_seconds.observe({ network: event.network }, event.rpcMs / 1000);
    },
  };
}

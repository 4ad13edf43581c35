import type { X402Network } from '@repo/schemas';
import type { ExactSvmSettler } from '@repo/x402-solana';

/** What the monitor logs through (a pino logger fits). */
export interface MonitorLogger {
  warn(fields: Record<string, unknown>, message: string): void;
  debug(fields: Record<string, unknown>, message: string): void;
}

/** How often the fee payer's balance is read, in milliseconds (the `fee-payer-monitor` loop's interval). */
export const FEE_PAYER_CHECK_INTERVAL_MS = 60_000;

/**
 * Watches the official-scheme fee payer's SOL balance on each network (README, "Observability
 * (market-intel)"): reads it ({@link FeePayerMonitor.check}, run at start and every minute by a loop) into `x402_fee_payer_lamports{network}`, and
 * logs a warning when it falls below `minLamports` (again only after it recovered), since an empty
 * fee payer makes every official-scheme payment fail. An unreachable or slow RPC (5 s per read) is
 * logged at debug and retried next time, so a check never holds up shutdown for long.
 */
export class FeePayerMonitor {
  private readonly low = new Set<X402Network>();
  private running: Promise<void> | undefined;

  constructor(
    private readonly settlers: Partial<Record<X402Network, ExactSvmSettler>>,
    private readonly options: {
      minLamports: bigint;
      logger: MonitorLogger;
      onBalance: (network: X402Network, lamports: bigint) => void;
    },
  ) {}

  /** Reads every balance once, now; resolves when done (never rejects). */
  check(): Promise<void> {
    this.running ??= Promise.all(
      (Object.entries(this.settlers) as [X402Network, ExactSvmSettler][]).map(async ([network, settler]) => {
        let lamports: bigint;
        try {
          lamports = await settler.feePayerLamports();
        } catch (err) {
          this.options.logger.debug({ err, network }, 'could not read the x402 fee payer balance');
          return;
        }
        this.options.onBalance(network, lamports);
        if (lamports < this.options.minLamports) {
          if (!this.low.has(network))
            this.options.logger.warn(
              {
                network,
                feePayer: settler.feePayer,
                lamports: lamports.toString(),
                minLamports: this.options.minLamports.toString(),
              },
              'x402 fee payer balance is low: official-scheme payments fail once it cannot pay fees; send it SOL',
            );
          this.low.add(network);
        } else {
          this.low.delete(network);
        }
      }),
    )
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        this.running = undefined;
      });
    return this.running;
  }
}

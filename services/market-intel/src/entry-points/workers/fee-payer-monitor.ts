import type { X402Network } from '@repo/schemas';
import type { ExactSvmSettler } from '@repo/x402-solana';

/** What the monitor logs through (a pino logger fits). */
export interface MonitorLogger {
  warn(fields: Record<string, unknown>, message: string): void;
  debug(fields: Record<string, unknown>, message: string): void;
}

/** How often the fee payer's balance is read, in milliseconds (the `fee-payer-monitor` loop's interval). */
export const FEE_PAYER_CHECK_INTERVAL_MS = 60_000;

/** The fee payer monitor; its {@link FeePayerMonitor.check} is the round of the `fee-payer-monitor` loop. */
export interface FeePayerMonitor {
  /** Reads every balance once, now; resolves when done (never rejects). */
  check(): Promise<void>;
}

/**
 * Watches the official-scheme fee payer's SOL balance on each network (README, "Observability
 * (market-intel)"): reads it ({@link FeePayerMonitor.check}, run at start and every
 * {@link FEE_PAYER_CHECK_INTERVAL_MS} by the composition's `fee-payer-monitor` loop) into `x402_fee_payer_lamports{network}`, and logs a warning when it falls below
 * `minLamports` (again only after it recovered), since an empty fee payer makes every
 * official-scheme payment fail. An unreachable or slow RPC (5 s per read) is logged at debug and
 * retried next time, so a check never holds up shutdown for long.
 * @param settlers the official-scheme settler of each network
 * @param options the threshold in lamports (read at every check), the logger and the balance callback (metrics)
 */
export function createFeePayerMonitor(
  settlers: Partial<Record<X402Network, ExactSvmSettler>>,
  options: {
    minLamports: bigint;
    logger: MonitorLogger;
    onBalance: (network: X402Network, lamports: bigint) => void;
  },
): FeePayerMonitor {
  const low = new Set<X402Network>();
  let running: Promise<void> | undefined;

  const check = (): Promise<void> => {
    running ??= Promise.all(
      (Object.entries(settlers) as [X402Network, ExactSvmSettler][]).map(async ([network, settler]) => {
        let lamports: bigint;
        try {
          lamports = await settler.feePayerLamports();
        } catch (err) {
          options.logger.debug({ err, network }, 'could not read the x402 fee payer balance');
          return;
        }
        options.onBalance(network, lamports);
        if (lamports < options.minLamports) {
          if (!low.has(network))
            options.logger.warn(
              {
                network,
                feePayer: settler.feePayer,
                lamports: lamports.toString(),
                minLamports: options.minLamports.toString(),
              },
              'x402 fee payer balance is low: official-scheme payments fail once it cannot pay fees; send it SOL',
            );
          low.add(network);
        } else {
          low.delete(network);
        }
      }),
    )
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        running = undefined;
      });
    return running;
  };

  return { check };
}

/**
 * A paid endpoint and its price (market-intel spec, "Prices"): `amountAtomic` is the
 * `maxAmountRequired` in atomic USDC units (6 decimals).
 */
export interface PaidRoute {
  /** `METHOD /path`, the key the payment ledger binds a signature to. */
  endpoint: string;
  amountAtomic: bigint;
  description: string;
  /** `sync` endpoints replay their stored response; `async` ones answer 409 on reuse. */
  kind: 'sync' | 'async';
}

/** Every paid endpoint of the Data API, at exactly the spec's prices. */
export const DATA_PRICES = {
  gaps: { endpoint: 'GET /api/v1/scout/gaps', amountAtomic: 100_000n, description: 'Market gaps: trends crossed with pain signals', kind: 'sync' },
  painClusters: { endpoint: 'GET /api/v1/scout/pain-clusters', amountAtomic: 100_000n, description: 'Clustered pain signals', kind: 'sync' },
  trends: { endpoint: 'GET /api/v1/scout/trends', amountAtomic: 100_000n, description: 'Trends over the last days', kind: 'sync' },
  brief: { endpoint: 'GET /api/v1/scout/brief', amountAtomic: 200_000n, description: 'The daily brief across sectors', kind: 'sync' },
  keywords: { endpoint: 'GET /api/v1/scout/keywords', amountAtomic: 50_000n, description: 'Keywords with aggregate occurrence counts', kind: 'sync' },
} as const satisfies Record<string, PaidRoute>;

/**
 * A paid endpoint and its price (services/market-intel/README.md, "Endpoints"): `amountAtomic` is the
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

/**
 * Every paid endpoint of the Data API, at exactly the prices of services/market-intel/README.md,
 * "Endpoints".
 */
export const DATA_PRICES = {
  gaps: {
    endpoint: 'GET /api/v1/scout/gaps',
    amountAtomic: 100_000n,
    description: 'Market gaps: trends crossed with pain signals',
    kind: 'sync',
  },
  painClusters: {
    endpoint: 'GET /api/v1/scout/pain-clusters',
    amountAtomic: 100_000n,
    description: 'Clustered pain signals',
    kind: 'sync',
  },
  trends: {
    endpoint: 'GET /api/v1/scout/trends',
    amountAtomic: 100_000n,
    description: 'Trends over the last days',
    kind: 'sync',
  },
  brief: {
    endpoint: 'GET /api/v1/scout/brief',
    amountAtomic: 200_000n,
    description: 'The daily brief across sectors',
    kind: 'sync',
  },
  keywords: {
    endpoint: 'GET /api/v1/scout/keywords',
    amountAtomic: 50_000n,
    description: 'Keywords with aggregate occurrence counts',
    kind: 'sync',
  },
} as const satisfies Record<string, PaidRoute>;

/** The paid Compute API (asynchronous: a reused signature is a 409 with the existing job). */
export const COMPUTE_PRICES = {
  forge: {
    endpoint: 'POST /api/v1/forge/ideate',
    amountAtomic: 15_000_000n,
    description: 'Forge: a 5-round multi-agent ideation (about 30 minutes)',
    kind: 'async',
  },
  prove: {
    endpoint: 'POST /api/v1/prove/debate',
    amountAtomic: 25_000_000n,
    description: 'Prove: a 6-persona adversarial debate and vote on one idea (about 60 minutes)',
    kind: 'async',
  },
} as const satisfies Record<string, PaidRoute>;

/**
 * Announced duration of each pipeline in minutes, the `etaMinutes` of the 202
 * (services/market-intel/README.md, "Endpoints": forge 30, prove 60).
 */
export const ETA_MINUTES = { forge: 30, prove: 60 } as const;

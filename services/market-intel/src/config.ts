import { z } from 'zod';
import { ReceiptIssuer } from '@repo/x402-core/receipts';
import {
  assertProductionReady,
  assertSetTogether,
  boolVar,
  BrokerEnv,
  ConfigError,
  DatabaseEnv,
  intVar,
  parseConfig,
  publicServiceEnv,
  replicaIdVar,
} from '@repo/service-kit';

/** Default access windows, in seconds: an hour for the Data API, a day for a compute job's status. */
export const ACCESS_WINDOW_DEFAULTS: Readonly<AccessWindows> = { data: 3600, jobs: 86_400 };

/** The longest access window accepted, in seconds (30 days). */
const ACCESS_WINDOW_MAX = 2_592_000;

/** Seconds after a payment during which its payer, signed in, gets the request again without paying. */
export interface AccessWindows {
  /** The Data API (`GET /api/v1/scout/*`): the same query answered again. */
  data: number;
  /** The compute endpoints: the same request answered with its job's status. */
  jobs: number;
}

/**
 * `X402_ACCESS_WINDOW_SECONDS` (README, "Configuration"): whole seconds from 0 to 2592000 (30 days),
 * either one number for both route classes or `data=<s>,jobs=<s>` (either or both; a class left out
 * keeps its default, {@link ACCESS_WINDOW_DEFAULTS}).
 */
const accessWindowsVar = z
  .string()
  .optional()
  .transform((raw, ctx): AccessWindows => {
    const windows = { ...ACCESS_WINDOW_DEFAULTS };
    if (raw === undefined) return windows;
    const seconds = (text: string): number | undefined => {
      if (!/^\d{1,7}$/.test(text)) return undefined;
      const value = Number(text);
      return value <= ACCESS_WINDOW_MAX ? value : undefined;
    };
    const fail = (message: string): AccessWindows => {
      ctx.addIssue({ code: 'custom', message });
      return windows;
    };
    const both = seconds(raw.trim());
    if (both !== undefined) return { data: both, jobs: both };
    const seen = new Set<string>();
    for (const part of raw.split(',')) {
      const [name, value, extra] = part.trim().split('=');
      if ((name !== 'data' && name !== 'jobs') || value === undefined || extra !== undefined)
        return fail(
          `must be seconds, or "data=<seconds>,jobs=<seconds>"; "${part.trim().slice(0, 40)}" is neither`,
        );
      if (seen.has(name)) return fail(`names ${name} twice`);
      seen.add(name);
      const parsed = seconds(value.trim());
      if (parsed === undefined) return fail(`${name} must be whole seconds from 0 to ${ACCESS_WINDOW_MAX}`);
      windows[name] = parsed;
    }
    return windows;
  });

const base58 = z.string().regex(/^[1-9A-HJ-NP-Za-km-z]{32,44}$/, 'must be a base58 Solana address');

/**
 * market-intel's environment (README, "Configuration"). Parsed once at boot; every bad variable is
 * named. Secrets and on-chain addresses have no defaults.
 */
export const MarketIntelEnv = z.object({
  ...publicServiceEnv(3001, 9101),
  ...DatabaseEnv,
  /** Public origin used in PaymentRequirements.resource, e.g. https://api.example.com; else from the request. */
  PUBLIC_BASE_URL: z.url().optional(),
  SOLANA_RPC_URL: z.url().default('http://127.0.0.1:8899'),
  USDC_MINT: base58,
  MERCHANT_TOKEN_ACCOUNT: base58,
  SOLANA_DEVNET_RPC_URL: z.url().default('http://127.0.0.1:8899/devnet'),
  USDC_MINT_DEVNET: base58.optional(),
  MERCHANT_TOKEN_ACCOUNT_DEVNET: base58.optional(),
  /** Seconds a payment transaction stays acceptable after its block time. */
  PAYMENT_FRESHNESS_SECONDS: intVar(600, 10, 86_400),
  /**
   * maxTimeoutSeconds advertised in PaymentRequirements (services/market-intel/README.md,
   * "Configuration": 60 by default).
   */
  PAYMENT_MAX_TIMEOUT_SECONDS: intVar(60, 1, 3600),
  /**
   * Path of the fee payer's keypair file (a JSON array of 64 bytes, SOL only): set, every 402 also
   * offers the official x402 exact SVM scheme (`PAYMENT-REQUIRED`) on the networks whose merchant
   * wallet is set, and this key co-signs and pays the fees of those payments.
   */
  X402_FEE_PAYER_KEYPAIR: z.string().optional(),
  /** The merchant wallet owning MERCHANT_TOKEN_ACCOUNT (its associated token account for USDC_MINT). */
  MERCHANT_WALLET: base58.optional(),
  /** The merchant wallet owning MERCHANT_TOKEN_ACCOUNT_DEVNET. */
  MERCHANT_WALLET_DEVNET: base58.optional(),
  /** Highest compute unit price an official-scheme payer may make the fee payer pay, in micro-lamports. */
  X402_MAX_PRIORITY_FEE_MICROLAMPORTS: intVar(50_000, 0, 10_000_000),
  /** Official-scheme settlements per payer wallet and minute, across replicas (each may cost a fee). */
  X402_SETTLEMENTS_PER_MINUTE_PER_PAYER: intVar(60, 1, 1_000_000),
  /** Official-scheme settlements per client (IPv4 address, IPv6 /64) and minute, across replicas. */
  X402_SETTLEMENTS_PER_MINUTE_PER_CLIENT: intVar(120, 1, 1_000_000),
  /** Below this fee payer balance (lamports) a warning is logged and the gauge shows it; default 0.05 SOL. */
  X402_FEE_PAYER_MIN_LAMPORTS: intVar(50_000_000, 0, Number.MAX_SAFE_INTEGER),
  /**
   * Key of the request-bound Solana Pay references (docs/payments.md, "Request-bound payments"): every 402
   * offers `extra.reference`, an HMAC of the request under this key, and a push payment carrying
   * another request's reference is refused. Unset: no reference is offered or checked.
   */
  X402_REFERENCE_SECRET: z.string().min(16, 'must be at least 16 characters').optional(),
  /** With X402_REFERENCE_SECRET: push payments without a reference are refused too (402 reference_missing). */
  X402_REQUIRE_REFERENCE: boolVar(false),
  /**
   * The Ed25519 key signing the 402's offers and the paid answers' receipts (x402 `offer-receipt`,
   * docs/payments.md, "Signed offers and receipts"): PKCS#8 PEM or a private JWK. Required in
   * production; unset elsewhere, a key is generated at each start (receipts then verify only
   * against that process's published keys).
   */
  X402_RECEIPT_SIGNING_KEY: z.string().optional(),
  /**
   * Public keys published beside the signing key at `/.well-known/jwks.json` and `did.json`: the
   * previous keys (their receipts still verify) and, during a rotation, the next one. PEM blocks or
   * JSON (a JWK, an array of JWKs or a JWKS).
   */
  X402_RECEIPT_PREVIOUS_KEYS: z.string().optional(),
  /**
   * Push payments that fail verification (random, foreign or wrong signatures: each costs RPC calls)
   * per client (IPv4 address, IPv6 /64), network and minute, across replicas; then 429.
   */
  X402_VERIFICATIONS_PER_MINUTE_PER_CLIENT: intVar(20, 1, 1_000_000),
  /** Consecutive failed RPC calls after which verification fails fast (503) for X402_RPC_BREAKER_OPEN_MS. */
  X402_RPC_BREAKER_FAILURES: intVar(5, 1, 1000),
  /** Milliseconds the RPC circuit breaker stays open before one probe call tries the endpoint again. */
  X402_RPC_BREAKER_OPEN_MS: intVar(10_000, 100, 600_000),
  /**
   * Devnet payments buy the Data API and compute jobs (docs/payments.md, "Devnet"); false: devnet is not
   * offered (`?network=devnet` is a 400 and no 402 offers it).
   */
  X402_DEVNET_ENABLED: boolVar(true),
  /** Compute jobs one payer wallet may start with devnet payments per 24 hours (its devnet USDC is free). */
  X402_DEVNET_COMPUTE_PER_DAY: intVar(3, 0, 100_000),
  /**
   * Compute jobs one client (IPv4 address, IPv6 /64) may start with devnet payments per day, whatever
   * wallets it pays from (wallets cost nothing), across replicas (docs/payments.md, "Devnet").
   */
  X402_DEVNET_COMPUTE_PER_CLIENT_PER_DAY: intVar(10, 0, 100_000),
  /**
   * Compute jobs all clients together may start with devnet payments per day, across replicas: the
   * bound on the LLM time devnet can buy (docs/payments.md, "Devnet"). The default is for development only:
   * production with devnet offered must set it (see `loadConfig`).
   */
  X402_DEVNET_COMPUTE_GLOBAL_PER_DAY: intVar(100, 0, 10_000_000),
  /**
   * Path of the refund wallet's keypair file (README, "Refunds"): set, a paid compute job that fails
   * on our side is refunded in full from this wallet's USDC associated token account (on the job's
   * network; the operator funds it with USDC and with SOL for the fees). Unset: no refunds.
   */
  X402_REFUND_KEYPAIR: z.string().optional(),
  /** How often each replica looks for refunds to send or confirm, in milliseconds. */
  X402_REFUND_INTERVAL_MS: intVar(5000, 50, 600_000),
  /** How long a replica waits for a sent refund to confirm before leaving it to a later pass, in milliseconds. */
  X402_REFUND_CONFIRM_TIMEOUT_MS: intVar(30_000, 100, 300_000),
  /** Hours a payment seen but never paid for is remembered (its first sighting) before it is pruned. */
  X402_SIGHTING_RETENTION_HOURS: intVar(24, 1, 24 * 30),
  /**
   * The x402 hot path (docs/architecture.md, "Fast paths"): the Data API's repeated 402 challenges and
   * the replays of its paid answers are answered from memory in front of the app; false: the app answers
   * every request, with the same bytes.
   */
  X402_HOT_PATH: boolVar(true),
  /**
   * The paid Data API's verified mark is folded into the stored answer's statement
   * (docs/architecture.md, "Fast paths"); false: it is written on its own before the handler runs, with
   * the same answers and rows.
   */
  X402_DEFER_VERIFIED_MARK: boolVar(true),
  /**
   * The x402 `sign-in-with-x` extension (docs/payments.md, "Signing in instead of paying again"): every
   * `PAYMENT-REQUIRED` carries a sign-in challenge, a payer signed in gets what it paid for again within
   * the access window, and a used payment is answered again only to its payer signed in. Unset: on with
   * `NODE_ENV=production`, off otherwise ({@link signInWithXEnabled}).
   */
  X402_SIGN_IN_WITH_X: z
    .enum(['true', 'false', '1', '0', 'yes', 'no'])
    .optional()
    .transform((v) => (v === undefined ? undefined : v === 'true' || v === '1' || v === 'yes')),
  /** The access windows of sign-in-with-x, per route class ({@link AccessWindows}). */
  X402_ACCESS_WINDOW_SECONDS: accessWindowsVar,
  /**
   * Sign-in-with-x proofs checked per client (IPv4 address, IPv6 /64), network and minute, across
   * replicas (each costs an Ed25519 verification and a database read); then 429 before the proof is
   * checked (docs/payments.md, "Signing in instead of paying again").
   */
  X402_SIGN_INS_PER_MINUTE_PER_CLIENT: intVar(120, 1, 1_000_000),
  /** Sign-in-with-x proofs checked per claimed wallet, network and minute, across replicas; then 429. */
  X402_SIGN_INS_PER_MINUTE_PER_ADDRESS: intVar(30, 1, 1_000_000),
  /**
   * The latest reports are read from memory while every stored report is heard, LISTEN plus the
   * `report-watermark` loop (docs/architecture.md, "Fast paths"); false: from the database on every
   * read, with neither the listener nor the loop.
   */
  REPORT_CACHE: boolVar(true),
  /** RabbitMQ, where compute jobs go to the pipeline-runner. */
  ...BrokerEnv,
  /** A runner is considered gone when its last heartbeat is older than this, in milliseconds. */
  RUNNER_STALE_AFTER_MS: intVar(20_000, 1000, 600_000),
  /** How often the outbox is swept for messages a crash left unpublished, in milliseconds. */
  OUTBOX_SWEEP_INTERVAL_MS: intVar(2000, 50, 60_000),
  /**
   * Signing secret of completion webhooks (README, "Webhooks (market-intel)"): the HMAC key of
   * `x-service-signature` and the Standard Webhooks key, as its bytes. Printable ASCII so that both
   * readings of it agree; at least 32 bytes and no `CHANGE_ME` in production (see `loadConfig`).
   * Unset: `webhook_url` is refused (422).
   */
  WEBHOOK_SECRET: z
    .string()
    .min(16, 'must be at least 16 characters')
    .regex(/^[\x21-\x7e]+$/, 'must be printable ASCII without spaces')
    .optional(),
  /** Per-attempt webhook deadline in milliseconds. */
  WEBHOOK_TIMEOUT_MS: intVar(10_000, 100, 120_000),
  /** Webhook attempts before giving up. */
  WEBHOOK_MAX_ATTEMPTS: intVar(8, 1, 50),
  /** Delay before the second webhook attempt in milliseconds; doubles per attempt (capped at 1 h). */
  WEBHOOK_RETRY_BASE_MS: intVar(5000, 10, 3_600_000),
  /** Comma-separated hosts, IPs or CIDRs webhooks may reach although private (development only). */
  SSRF_ALLOWLIST: z.string().optional(),
  /** The scout sources file (JSON: sectors, feeds, discussion searches); unset: no scheduled scans. */
  SCOUT_SOURCES_FILE: z.string().optional(),
  /** Minutes between scheduled scans of a sector (default daily); 0: only scans started by the admin command. */
  SCOUT_SCAN_INTERVAL_MINUTES: intVar(1440, 0, 525_600),
  /** How often each replica checks which sectors are due, in milliseconds. */
  SCOUT_SCHEDULER_TICK_MS: intVar(60_000, 100, 3_600_000),
  /** Days of stored items a scan analyses (and keeps in its report). */
  SCOUT_WINDOW_DAYS: intVar(7, 1, 30),
  /** A paid job no runner started within this many minutes gets its first step published again. */
  JOB_START_REPUBLISH_MINUTES: intVar(15, 1, 10_080),
  /** A paid job no runner started within this many minutes is failed (`stalled`). */
  JOB_START_FAIL_MINUTES: intVar(120, 1, 10_080),
  /** How often each replica looks for paid jobs not started, in milliseconds. */
  JOB_WATCHDOG_TICK_MS: intVar(30_000, 100, 3_600_000),
  /** A scan without progress for this many minutes is failed, so its sector can be scanned again. */
  SCOUT_SCAN_STALE_MINUTES: intVar(120, 1, 10_080),
  /** Identifies this replica in RabbitMQ (its heartbeat queue); default host name + pid. */
  INSTANCE_ID: replicaIdVar(),
});

/** The parsed configuration. */
export type MarketIntelConfig = z.infer<typeof MarketIntelEnv>;

/** Whether sign-in-with-x is on: `X402_SIGN_IN_WITH_X`, by default only with `NODE_ENV=production`. */
export function signInWithXEnabled(
  config: Pick<MarketIntelConfig, 'X402_SIGN_IN_WITH_X' | 'NODE_ENV'>,
): boolean {
  return config.X402_SIGN_IN_WITH_X ?? config.NODE_ENV === 'production';
}

/**
 * With sign-in-with-x on, every network offered must make the official offer: the sign-in challenge
 * travels in its `PAYMENT-REQUIRED`, and without it a used payment's answer would go to whoever
 * presents the payment again (docs/payments.md, "Signing in instead of paying again").
 * @throws ConfigError naming `X402_FEE_PAYER_KEYPAIR`, `MERCHANT_WALLET` and, while devnet is offered,
 *   `MERCHANT_WALLET_DEVNET` where unset
 */
function assertSignInOffered(config: MarketIntelConfig, devnetOffered: boolean): void {
  if (!signInWithXEnabled(config)) return;
  const why =
    'sign-in-with-x is on (X402_SIGN_IN_WITH_X, the default in production) and its challenge travels in the official x402 offer, which needs it; set it, or X402_SIGN_IN_WITH_X=false, with which a used payment is answered again to whoever presents it';
  const missing = [
    ['X402_FEE_PAYER_KEYPAIR', config.X402_FEE_PAYER_KEYPAIR],
    ['MERCHANT_WALLET', config.MERCHANT_WALLET],
    ...(devnetOffered ? [['MERCHANT_WALLET_DEVNET', config.MERCHANT_WALLET_DEVNET]] : []),
  ].filter(([, value]) => !value);
  if (missing.length > 0) throw new ConfigError(missing.map(([name]) => `${name}: ${why}`));
}

/**
 * Reads the configuration from the environment.
 * @throws ConfigError naming every invalid or missing variable, `USDC_MINT_DEVNET` without
 *   `MERCHANT_TOKEN_ACCOUNT_DEVNET` or the reverse, and with `NODE_ENV=production` every
 *   insecure setting (README, "Configuration"; docs/deploying.md, "Deploying"): RabbitMQ's default or no
 *   credentials, a database, broker or RPC URL that reaches this machine (loopback or unspecified
 *   address in any form, a `localhost` name, a socket, pg's `host` parameter), a non-empty
 *   `SSRF_ALLOWLIST`, a `WEBHOOK_SECRET` or `X402_REFERENCE_SECRET` shorter than 32 bytes, holding the
 *   template's `CHANGE_ME` or visibly not random, `*` or an `http:` origin in `CORS_ORIGINS`, and, while
 *   devnet is offered (`X402_DEVNET_ENABLED` with a devnet mint), no explicit
 *   `X402_DEVNET_COMPUTE_GLOBAL_PER_DAY`, no `X402_RECEIPT_SIGNING_KEY` or no `PUBLIC_BASE_URL` (to which sign-in proofs are bound too); a bad
 *   `X402_ACCESS_WINDOW_SECONDS`; and
 *   at any `NODE_ENV` a receipt key that is not Ed25519 (`X402_RECEIPT_SIGNING_KEY`,
 *   `X402_RECEIPT_PREVIOUS_KEYS`); with sign-in-with-x on, no fee payer or merchant wallet for a
 *   network offered
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env): MarketIntelConfig {
  const config = parseConfig(MarketIntelEnv, env);
  const devnetOffered = config.X402_DEVNET_ENABLED && Boolean(config.USDC_MINT_DEVNET);
  assertProductionReady(config.NODE_ENV, [
    { kind: 'remote', name: 'DATABASE_URL', value: config.DATABASE_URL },
    { kind: 'broker', name: 'AMQP_URL', value: config.AMQP_URL },
    { kind: 'remote', name: 'SOLANA_RPC_URL', value: config.SOLANA_RPC_URL },
    ...(devnetOffered
      ? [
          { kind: 'remote' as const, name: 'SOLANA_DEVNET_RPC_URL', value: config.SOLANA_DEVNET_RPC_URL },
          {
            kind: 'set' as const,
            name: 'X402_DEVNET_COMPUTE_GLOBAL_PER_DAY',
            // The raw value: the parsed one always has the development default.
            value: env.X402_DEVNET_COMPUTE_GLOBAL_PER_DAY,
            why: 'the most compute jobs all clients together may start with free devnet USDC per day; 0 turns them off',
          },
        ]
      : []),
    { kind: 'empty', name: 'SSRF_ALLOWLIST', value: config.SSRF_ALLOWLIST },
    { kind: 'secret', name: 'WEBHOOK_SECRET', value: config.WEBHOOK_SECRET },
    { kind: 'secret', name: 'X402_REFERENCE_SECRET', value: config.X402_REFERENCE_SECRET },
    {
      kind: 'set',
      name: 'X402_RECEIPT_SIGNING_KEY',
      value: config.X402_RECEIPT_SIGNING_KEY,
      why: 'the Ed25519 key signing offers and receipts, which payers keep as evidence (openssl genpkey -algorithm ed25519)',
    },
    {
      kind: 'set',
      name: 'PUBLIC_BASE_URL',
      value: config.PUBLIC_BASE_URL,
      why: 'the public origin of resource URLs and of the did:web key id of signed offers and receipts',
    },
    { kind: 'cors', name: 'CORS_ORIGINS', value: config.CORS_ORIGINS },
  ]);
  assertSetTogether(config, [['USDC_MINT_DEVNET', 'MERCHANT_TOKEN_ACCOUNT_DEVNET']]);
  assertSignInOffered(config, devnetOffered);
  try {
    new ReceiptIssuer({
      signingKey: config.X402_RECEIPT_SIGNING_KEY ?? ReceiptIssuer.generateKey(),
      publishedKeys: config.X402_RECEIPT_PREVIOUS_KEYS ?? '',
    });
  } catch (error) {
    const message = (error as Error).message;
    throw new ConfigError([
      message.startsWith('signing key')
        ? `X402_RECEIPT_SIGNING_KEY: ${message.slice('signing key '.length)}`
        : `X402_RECEIPT_PREVIOUS_KEYS: ${message}`,
    ]);
  }
  return config;
}

import { readFileSync } from 'node:fs';
import type { Pool } from 'pg';
import type { RequestHandler } from 'express';
import { clientIpKey, ConfigError, createRateLimit } from '@repo/service-kit';
import type { X402Network } from '@repo/schemas';
import {
  requirePayment,
  type HotPath,
  type PaymentGateway,
  type SettlementGuard,
  type SignInGuard,
  type VerificationAttempt,
  type VerificationGuard,
} from '@repo/x402-express';
import {
  PoolSqlClient,
  PrismaPaymentIdentifiers,
  PrismaPaymentLedger,
  PrismaSignInRecords,
  VerificationAttemptLimit,
} from '@repo/x402-ledger';
import {
  associatedTokenAccountOf,
  ExactSvmSettler,
  parseKeypairJson,
  RefundSender,
  SolanaPaymentVerifier,
  type RpcCallEvent,
  type SolanaPaymentVerifierOptions,
} from '@repo/x402-solana';
import type { ResourceDiscovery } from '@repo/x402-core';
import { ReceiptIssuer } from '@repo/x402-core/receipts';
import { signInWithXEnabled, type MarketIntelConfig } from '../config';
import type { PaidRoute } from '../domain/prices';

/** The configuration {@link createPaymentGateway} reads. */
export type PaymentConfig = Pick<
  MarketIntelConfig,
  | 'SOLANA_RPC_URL'
  | 'USDC_MINT'
  | 'MERCHANT_TOKEN_ACCOUNT'
  | 'SOLANA_DEVNET_RPC_URL'
  | 'USDC_MINT_DEVNET'
  | 'MERCHANT_TOKEN_ACCOUNT_DEVNET'
  | 'PAYMENT_FRESHNESS_SECONDS'
  | 'PUBLIC_BASE_URL'
  | 'X402_FEE_PAYER_KEYPAIR'
  | 'MERCHANT_WALLET'
  | 'MERCHANT_WALLET_DEVNET'
  | 'X402_MAX_PRIORITY_FEE_MICROLAMPORTS'
  | 'X402_SETTLEMENTS_PER_MINUTE_PER_PAYER'
  | 'X402_SETTLEMENTS_PER_MINUTE_PER_CLIENT'
  | 'X402_REFERENCE_SECRET'
  | 'X402_REQUIRE_REFERENCE'
  | 'X402_VERIFICATIONS_PER_MINUTE_PER_CLIENT'
  | 'X402_RPC_BREAKER_FAILURES'
  | 'X402_RPC_BREAKER_OPEN_MS'
  | 'X402_DEVNET_ENABLED'
  | 'X402_REFUND_KEYPAIR'
  | 'DATABASE_URL'
  | 'NODE_ENV'
  | 'X402_SIGN_IN_WITH_X'
  | 'X402_ACCESS_WINDOW_SECONDS'
  | 'X402_SIGN_INS_PER_MINUTE_PER_CLIENT'
  | 'X402_SIGN_INS_PER_MINUTE_PER_ADDRESS'
>;

/**
 * Builds the x402 payment middleware of one paid route (answers 402 until paid, replays reuse), with
 * its discovery metadata (docs/payments.md, "Discovery").
 */
export type PaymentGate = (route: PaidRoute, discovery: ResourceDiscovery) => RequestHandler;

/** Reads a keypair file named by a variable, or stops the boot naming it. */
function readKeypairVariable(name: string, file: string): Uint8Array {
  try {
    return parseKeypairJson(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new ConfigError([`${name}: ${(error as { message?: unknown }).message ?? String(error)}`], {
      cause: error,
    });
  }
}

/**
 * The refund senders (README, "Refunds"): one per network payments are taken on (`solana`, and
 * `solana-devnet` when enabled and configured), all from the wallet of `X402_REFUND_KEYPAIR`; none
 * when it is unset (refunds are off).
 * @throws ConfigError naming `X402_REFUND_KEYPAIR` when the file cannot be read as a keypair, or when it is
 *   the fee payer's (`X402_FEE_PAYER_KEYPAIR`, which must never own a token account)
 */
export function createRefundSenders(config: PaymentConfig): Partial<Record<X402Network, RefundSender>> {
  if (!config.X402_REFUND_KEYPAIR) return {};
  const refundSecretKey = readKeypairVariable('X402_REFUND_KEYPAIR', config.X402_REFUND_KEYPAIR);
  if (
    config.X402_FEE_PAYER_KEYPAIR &&
    Buffer.from(readKeypairVariable('X402_FEE_PAYER_KEYPAIR', config.X402_FEE_PAYER_KEYPAIR)).equals(
      Buffer.from(refundSecretKey),
    )
  ) {
    throw new ConfigError([
      'X402_REFUND_KEYPAIR: the refund wallet must not be the x402 fee payer (X402_FEE_PAYER_KEYPAIR), which never holds USDC',
    ]);
  }
  const senders: Partial<Record<X402Network, RefundSender>> = {
    solana: new RefundSender({
      network: 'solana',
      rpcUrl: config.SOLANA_RPC_URL,
      asset: config.USDC_MINT,
      refundSecretKey,
    }),
  };
  if (config.X402_DEVNET_ENABLED && config.USDC_MINT_DEVNET) {
    senders['solana-devnet'] = new RefundSender({
      network: 'solana-devnet',
      rpcUrl: config.SOLANA_DEVNET_RPC_URL,
      asset: config.USDC_MINT_DEVNET,
      refundSecretKey,
    });
  }
  return senders;
}

/**
 * The official exact SVM scheme per network (docs/payments.md, "Paying with an official x402 client"): built
 * when `X402_FEE_PAYER_KEYPAIR` is set, for each network whose merchant wallet is set.
 * @throws ConfigError naming the variables when the keypair file cannot be read, or when a merchant
 *   wallet's associated token account is not the configured merchant token account (the official
 *   scheme pays into that associated account)
 */
export function createSettlers(config: PaymentConfig): Partial<Record<X402Network, ExactSvmSettler>> {
  if (!config.X402_FEE_PAYER_KEYPAIR) return {};
  const feePayerSecretKey = readKeypairVariable('X402_FEE_PAYER_KEYPAIR', config.X402_FEE_PAYER_KEYPAIR);
  const networks = [
    [
      'solana',
      config.SOLANA_RPC_URL,
      config.USDC_MINT,
      config.MERCHANT_TOKEN_ACCOUNT,
      config.MERCHANT_WALLET,
      '',
    ],
    [
      'solana-devnet',
      config.SOLANA_DEVNET_RPC_URL,
      config.USDC_MINT_DEVNET,
      config.MERCHANT_TOKEN_ACCOUNT_DEVNET,
      config.MERCHANT_WALLET_DEVNET,
      '_DEVNET',
    ],
  ] as const;
  const settlers: Partial<Record<X402Network, ExactSvmSettler>> = {};
  for (const [network, rpcUrl, asset, tokenAccount, wallet, suffix] of networks) {
    if (!wallet || !asset || !tokenAccount) continue;
    if (network === 'solana-devnet' && !config.X402_DEVNET_ENABLED) continue;
    if (associatedTokenAccountOf(wallet, asset) !== tokenAccount) {
      throw new ConfigError([
        `MERCHANT_WALLET${suffix}: its associated token account for USDC_MINT${suffix} is ${associatedTokenAccountOf(wallet, asset)}, not MERCHANT_TOKEN_ACCOUNT${suffix} (${tokenAccount})`,
      ]);
    }
    settlers[network] = new ExactSvmSettler({
      network,
      rpcUrl,
      asset,
      payTo: wallet,
      feePayerSecretKey,
      maxPriorityFeeMicroLamports: config.X402_MAX_PRIORITY_FEE_MICROLAMPORTS,
    });
  }
  return settlers;
}

/**
 * Seconds an in-flight settlement holds its payer's slot at most (a replica that died mid-settlement
 * frees it then): longer than a settlement's confirmation takes.
 */
const SETTLEMENT_IN_FLIGHT_SECONDS = 60;

/**
 * The settlement limits (docs/payments.md, "Paying with an official x402 client"): per client (IPv4 address or
 * IPv6 /64) and per payer wallet, each per network and minute, and one settlement in flight per payer
 * wallet and source token account (so that N simultaneous payments from a wallet that holds one price
 * cannot make the fee payer pay N − 1 failed fees), all in the `rate_limits` table so that they hold
 * across replicas. The payer is the wallet whose signature of the transaction was checked
 * (`ExactSvmSettler.signatureOf`): nobody can spend another wallet's limits.
 * @param pool the service's rate-limit pool (`Database.rateLimitPool`: asynchronous commit)
 */
export function createSettlementGuard(config: PaymentConfig, pool: Pool): SettlementGuard {
  type SettlementAttempt = Parameters<SettlementGuard>[0];
  const perMinute = minuteLimitsInTurn(pool, {
    client: {
      keyPrefix: 'x402_settle_client',
      points: config.X402_SETTLEMENTS_PER_MINUTE_PER_CLIENT,
      keyOf: ({ ip, network }: SettlementAttempt) => `${network}:${clientIpKey(ip)}`,
    },
    payer: {
      keyPrefix: 'x402_settle_payer',
      points: config.X402_SETTLEMENTS_PER_MINUTE_PER_PAYER,
      keyOf: ({ payer, network }: SettlementAttempt) => `${network}:${payer ?? 'unknown'}`,
    },
  });
  // Every slot taken is given back, refused or not, so the count is the settlements in flight.
  const inFlight = createRateLimit(pool, {
    keyPrefix: 'x402_settle_in_flight',
    points: 1,
    durationSeconds: SETTLEMENT_IN_FLIGHT_SECONDS,
    inMemoryRefusal: false,
  });
  return async (attempt) => {
    const limited = await perMinute(attempt);
    if (!limited.allowed) return limited;
    const { payer, source, network } = attempt;
    const slot = `${network}:${payer ?? 'unknown'}:${source ?? 'unknown'}`;
    const held = await inFlight.consume(slot);
    if (!held.allowed) {
      await inFlight.reward(slot);
      return { allowed: false, retryAfterSeconds: 1, limit: 'payer_in_flight' };
    }
    return { allowed: true, release: () => inFlight.reward(slot) };
  };
}

/**
 * The sign-in limits (docs/payments.md, "Signing in instead of paying again"): sign-in proofs checked
 * per client (IPv4 address or IPv6 /64) and per claimed wallet, each per network and minute, in the
 * `rate_limits` table so that they hold across replicas. Asked before a proof's signature is checked,
 * so the wallet is the one it claims: a flood of forged proofs naming a wallet delays that wallet's
 * sign-ins by at most the minute (paying still works).
 * @param pool the service's rate-limit pool (`Database.rateLimitPool`: asynchronous commit)
 */
export function createSignInGuard(config: PaymentConfig, pool: Pool): SignInGuard {
  type SignInAttempt = Parameters<SignInGuard>[0];
  return minuteLimitsInTurn(pool, {
    client: {
      keyPrefix: 'x402_siwx_client',
      points: config.X402_SIGN_INS_PER_MINUTE_PER_CLIENT,
      keyOf: ({ ip, network }: SignInAttempt) => `${network}:${clientIpKey(ip)}`,
    },
    address: {
      keyPrefix: 'x402_siwx_address',
      points: config.X402_SIGN_INS_PER_MINUTE_PER_ADDRESS,
      keyOf: ({ address, network }: SignInAttempt) => `${network}:${address}`,
    },
  });
}

/** One per-minute limit of {@link minuteLimitsInTurn}: its key prefix, events per minute and key. */
interface MinuteLimit<A> {
  keyPrefix: string;
  points: number;
  keyOf: (attempt: A) => string;
}

/**
 * Limits of events per minute (`createRateLimit`, the `rate_limits` table), counted in the order
 * given: the first that refuses answers, with its name and the seconds until its window ends, and the
 * later ones count nothing.
 */
function minuteLimitsInTurn<A, L extends string>(
  pool: Pool,
  limits: Record<L, MinuteLimit<A>>,
): (attempt: A) => Promise<{ allowed: true } | { allowed: false; retryAfterSeconds: number; limit: L }> {
  const counted = (Object.entries(limits) as [L, MinuteLimit<A>][]).map(
    ([limit, { keyPrefix, points, keyOf }]) =>
      [limit, keyOf, createRateLimit(pool, { keyPrefix, points, durationSeconds: 60 })] as const,
  );
  return async (attempt) => {
    for (const [limit, keyOf, rate] of counted) {
      const decision = await rate.consume(keyOf(attempt));
      if (!decision.allowed) return { allowed: false, retryAfterSeconds: decision.retryAfterSeconds, limit };
    }
    return { allowed: true };
  };
}

/**
 * The limit on push payments that do not verify (docs/payments.md, "Paying for data (x402)"): each costs RPC
 * calls, so a client (IPv4 address or IPv6 /64) gets X402_VERIFICATIONS_PER_MINUTE_PER_CLIENT
 * attempts in flight or failed per network and minute, counted in the payment ledger's own table
 * (`@repo/x402-ledger`'s README, "Verification attempts") so that it holds across replicas; then `429`
 * until the window ends. A payment that verifies gives its attempt back. Its `counter` names the same
 * row, so the payment ledger counts a payment's attempt in its claim statement and gives it back in
 * its verified mark (docs/architecture.md, "How a paid request flows (market-intel)"); `check` and
 * `verified` count the sightings and give back RPC failures.
 * @param pool the service's rate-limit pool (`Database.rateLimitPool`: asynchronous commit)
 */
export function createVerificationGuard(config: PaymentConfig, pool: Pool): VerificationGuard {
  const attempts = new VerificationAttemptLimit(new PoolSqlClient(pool), {
    limit: config.X402_VERIFICATIONS_PER_MINUTE_PER_CLIENT,
    windowMs: 60_000,
  });
  const keyOf = ({ ip, network }: VerificationAttempt) => `${network}:${clientIpKey(ip)}`;
  return {
    check: async (attempt) => {
      const counted = await attempts.count(keyOf(attempt));
      return counted.allowed
        ? { allowed: true }
        : { allowed: false, retryAfterSeconds: counted.retryAfterSeconds };
    },
    verified: (attempt) => attempts.giveBack(keyOf(attempt)),
    counter: (attempt) => attempts.counter(keyOf(attempt)),
  };
}

/**
 * Builds the x402 payment gateway from the configuration: one verifier per configured network
 * (`solana` always, `solana-devnet` when enabled and its mint and merchant account are set) with its not-found
 * cache and RPC circuit breaker, the official-scheme settlers ({@link createSettlers}), the
 * Postgres payment ledger (table `x402_payments`), with a settler the payment identifiers (table
 * `x402_payment_identifiers`, docs/payments.md, "Retrying safely: payment identifiers"), with a settler and
 * `X402_SIGN_IN_WITH_X` on sign-in-with-x (table `x402_siwx_nonces`, windows from
 * `X402_ACCESS_WINDOW_SECONDS`, its proofs limited by {@link createSignInGuard}: docs/payments.md, "Signing in instead of paying again"), the request-bound references when
 * `X402_REFERENCE_SECRET` is set, and the verification and settlement rate limits (stored through the
 * rate-limit pool); `close()` releases the RPC connection pools (the verifiers' and the settlers'). Its `onAnswerStored` hands every
 * stored paid answer to the hot path named with `answersTo(hotPath)` (`@repo/x402-express`'s README,
 * "The hot path (`createHotPath`)"), which remembers it for replays; none is told before.
 * @param pools the service's main pool (`Database.pool`: the ledger's statements, straight through `pg`,
 *   see {@link PoolSqlClient}) and its rate-limit pool (`Database.rateLimitPool`: the rate limits' table)
 * @param onRpcCall told of every verifier RPC call and of every call avoided (metrics)
 * @throws Error when the official-scheme configuration is invalid (see {@link createSettlers})
 */
export function createPaymentGateway(
  config: PaymentConfig,
  pools: { main: Pool; rateLimit: Pool },
  onRpcCall?: (call: RpcCallEvent) => void,
): PaymentGateway & {
  close(): Promise<void>;
  answersTo(hotPath: Pick<HotPath, 'onAnswerStored'>): void;
} {
  const options: SolanaPaymentVerifierOptions = {
    freshnessWindowSeconds: config.PAYMENT_FRESHNESS_SECONDS,
    breakerFailureThreshold: config.X402_RPC_BREAKER_FAILURES,
    breakerOpenMs: config.X402_RPC_BREAKER_OPEN_MS,
    ...(onRpcCall ? { onRpcCall } : {}),
  };
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
  if (config.X402_DEVNET_ENABLED && config.USDC_MINT_DEVNET && config.MERCHANT_TOKEN_ACCOUNT_DEVNET) {
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
  const settlers = createSettlers(config);
  // The hot path is built after the routes that take payments: they tell it through this relay.
  let answers: Pick<HotPath, 'onAnswerStored'> | undefined;
  const sql = new PoolSqlClient(pools.main);
  return {
    ledger: new PrismaPaymentLedger(sql),
    // The official scheme's retries carry new transactions: the payment-identifier extension ties
    // them to the first (docs/payments.md, "Retrying safely: payment identifiers").
    ...(Object.keys(settlers).length > 0 ? { identifiers: new PrismaPaymentIdentifiers(sql) } : {}),
    verifiers,
    settlers,
    verificationGuard: createVerificationGuard(config, pools.rateLimit),
    ...(Object.keys(settlers).length > 0
      ? { settlementGuard: createSettlementGuard(config, pools.rateLimit) }
      : {}),
    ...(config.X402_REFERENCE_SECRET
      ? { references: { secret: config.X402_REFERENCE_SECRET, required: config.X402_REQUIRE_REFERENCE } }
      : {}),
    // Sign-in-with-x is declared with the official offer (docs/payments.md, "Signing in instead of
    // paying again").
    ...(signInWithXEnabled(config) && Object.keys(settlers).length > 0
      ? {
          signInWithX: {
            records: new PrismaSignInRecords(sql),
            accessWindowSeconds: {
              sync: config.X402_ACCESS_WINDOW_SECONDS.data,
              async: config.X402_ACCESS_WINDOW_SECONDS.jobs,
            },
            requiredForReplay: true,
            statement: 'Sign in to market-intel with the wallet that paid',
            guard: createSignInGuard(config, pools.rateLimit),
          },
        }
      : {}),
    publicBaseUrl: config.PUBLIC_BASE_URL,
    onAnswerStored: (answer, res) => answers?.onAnswerStored(answer, res),
    answersTo(hotPath) {
      answers = hotPath;
    },
    /** Closes the verifiers' and settlers' RPC connection pools (the database pool belongs to the caller). */
    async close() {
      await Promise.all([
        ...Object.values(verifiers).map((v) => v.close()),
        ...Object.values(settlers).map((s) => s.close()),
      ]);
    },
  };
}

/**
 * The signer of the 402's offers and the paid answers' receipts (docs/payments.md, "Signed offers and
 * receipts"): `X402_RECEIPT_SIGNING_KEY`, with `X402_RECEIPT_PREVIOUS_KEYS` published beside it; without
 * a key (development and tests only: production refuses to start), a new one each start, and
 * `onEphemeralKey` is told so.
 * @throws Error naming the key that cannot be read (`loadConfig` already refused it)
 */
export function createReceiptIssuer(
  config: Pick<MarketIntelConfig, 'X402_RECEIPT_SIGNING_KEY' | 'X402_RECEIPT_PREVIOUS_KEYS'>,
  onEphemeralKey: () => void,
): ReceiptIssuer {
  const signingKey = config.X402_RECEIPT_SIGNING_KEY ?? ReceiptIssuer.generateKey();
  if (!config.X402_RECEIPT_SIGNING_KEY) onEphemeralKey();
  return new ReceiptIssuer({ signingKey, publishedKeys: config.X402_RECEIPT_PREVIOUS_KEYS ?? '' });
}

/**
 * The payment gate of the app: each paid route gets `requirePayment` with its price.
 * @param gateway from {@link createPaymentGateway}
 * @param options `maxTimeoutSeconds` of the official scheme's offer, in seconds (the push requirement
 *   advertises its verifier's freshness window, `PAYMENT_FRESHNESS_SECONDS`); `deferVerifiedMark`, from
 *   `X402_DEFER_VERIFIED_MARK` (docs/architecture.md, "Fast paths")
 */
export function paymentGate(
  gateway: PaymentGateway,
  options: { maxTimeoutSeconds: number; deferVerifiedMark: boolean },
): PaymentGate {
  return (route, discovery) =>
    requirePayment({
      ...gateway,
      amountAtomic: route.amountAtomic,
      description: route.description,
      endpoint: route.endpoint,
      mimeType: 'application/json',
      maxTimeoutSeconds: options.maxTimeoutSeconds,
      deferVerifiedMark: options.deferVerifiedMark,
      discovery,
    });
}

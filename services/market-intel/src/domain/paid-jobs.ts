import { AppError } from '@repo/errors';
import { clientIpKey, createRateLimit, type RateLimit } from '@repo/service-kit';
import type { PaymentClaim, PaymentLedger } from '@repo/x402-ledger';
import type { Pool } from 'pg';
import { newJobId, type JobRepository } from '../data/jobs';
import { ETA_MINUTES, type PaidRoute } from './prices';

/**
 * The caps on compute jobs paid with devnet USDC beyond the per-wallet one (README, "Configuration";
 * docs/payments.md, "Devnet"): wallets cost nothing, so jobs are also counted per client (IPv4 address, or
 * IPv6 /64 and embedded IPv4 as `clientIpKey` keys it) and for the whole service, each per day, in
 * the `rate_limits` table so that they hold across replicas.
 */
export interface DevnetComputeCaps {
  /** Jobs per client and day (`X402_DEVNET_COMPUTE_PER_CLIENT_PER_DAY`). */
  perClientPerDay: number;
  /** Jobs of all clients together per day (`X402_DEVNET_COMPUTE_GLOBAL_PER_DAY`). */
  globalPerDay: number;
  perClient: RateLimit;
  global: RateLimit;
}

/** The one key of the global devnet cap. */
const ALL_CLIENTS = 'all';

/**
 * Creates the devnet compute caps ({@link DevnetComputeCaps}): fixed windows of 24 hours from the
 * first job counted in each, stored with `createRateLimit` (key prefixes `devnet_compute_client` and
 * `devnet_compute_global`). Jobs that do not start are given back, so the counts are the jobs started
 * (and those being started) in the window.
 * @param pool the service's rate-limit pool (`Database.rateLimitPool`)
 * @param limits jobs per client and day, and of all clients per day (0: none)
 */
export function createDevnetComputeCaps(
  pool: Pool,
  limits: { perClientPerDay: number; globalPerDay: number },
): DevnetComputeCaps {
  const day = 86_400;
  // Counts are given back (reward), so a refused key can come under its limit again: no memory refusal.
  return {
    ...limits,
    perClient: createRateLimit(pool, {
      keyPrefix: 'devnet_compute_client',
      points: limits.perClientPerDay,
      durationSeconds: day,
      inMemoryRefusal: false,
    }),
    global: createRateLimit(pool, {
      keyPrefix: 'devnet_compute_global',
      points: limits.globalPerDay,
      durationSeconds: day,
      inMemoryRefusal: false,
    }),
  };
}

/** A place taken under a devnet cap: what to give back when the job does not start. */
type TakenPlace = { limit: RateLimit; key: string };

/**
 * Takes one place under the client's cap, then one under the global cap; a refusal gives back what
 * it took, the refused count included, so the counts stay the jobs started.
 * @returns the places taken, to give back if the job is not created after all
 * @throws AppError `rate_limited` (429, `Retry-After` in seconds until the window ends) with
 *   `details.limit` `client_per_day` or `global_per_day`
 * @throws whatever the database throws
 */
async function takeDevnetPlaces(caps: DevnetComputeCaps, ip: string | undefined): Promise<TakenPlace[]> {
  const client = { limit: caps.perClient, key: clientIpKey(ip) };
  const byClient = await client.limit.consume(client.key);
  if (!byClient.allowed) {
    await giveBack([client]);
    throw devnetRefusal(
      'This client has started the most devnet compute jobs allowed today',
      'client_per_day',
      caps.perClientPerDay,
      byClient.retryAfterSeconds,
    );
  }
  const all = { limit: caps.global, key: ALL_CLIENTS };
  const overall = await all.limit.consume(all.key);
  if (!overall.allowed) {
    await giveBack([client, all]);
    throw devnetRefusal(
      'The devnet compute jobs of all clients for today are used up',
      'global_per_day',
      caps.globalPerDay,
      overall.retryAfterSeconds,
    );
  }
  return [client, all];
}

/** Gives back places taken (best effort: a lost give-back only refuses a job more, never one less). */
async function giveBack(places: readonly TakenPlace[]): Promise<void> {
  await Promise.all(places.map(({ limit, key }) => limit.reward(key).catch(() => undefined)));
}

function devnetRefusal(message: string, limit: string, perDay: number, retryAfterSeconds: number): AppError {
  return new AppError('rate_limited', message, {
    details: { limit, perDay },
    headers: { 'Retry-After': String(retryAfterSeconds) },
  });
}

/** What starting a paid job needs, given once by the composition root. */
export interface PaidJobPorts {
  jobs: Pick<JobRepository, 'createPaidJob'>;
  /** The payment ledger: the claim is completed with the job, or given back when no job is created. */
  ledger: Pick<PaymentLedger, 'completeWithJob' | 'releaseLease'>;
  /** Publishes the job's first step right after the commit; never rejects (the outbox sweep covers failures). */
  publishNow(outboxIds: readonly bigint[]): Promise<void>;
  /** Called when a job was created (metrics). */
  onJobCreated?: (kind: 'forge' | 'prove') => void;
  /** Compute jobs one payer wallet may start with devnet payments per 24 hours; absent: no limit. */
  devnetJobsPerDay?: number;
  /** The per-client and global caps on devnet jobs ({@link createDevnetComputeCaps}); absent: none. */
  devnetCaps?: DevnetComputeCaps;
}

/** A paid compute request whose payment was accepted (verified and claimed, not consumed yet). */
export interface PaidJobRequest {
  kind: 'forge' | 'prove';
  route: PaidRoute;
  payment: {
    /** The payment's transaction signature (base58). */
    signature: string;
    /** The paying wallet (base58). */
    payer: string;
    /** The network paid on, e.g. `solana-devnet`. */
    network: string;
    claim: PaymentClaim;
  };
  /** The client's address, as the devnet per-client cap keys it. */
  clientIp: string | undefined;
  webhookUrl: string | null;
  proveSessionId: string | null;
  /** The job's input, read once the devnet places are taken (a forge job reads the latest reports). */
  buildInput(): Promise<unknown>;
}

/** The 202 body of a started job (services/market-intel/README.md, "Endpoints"). */
export interface StartedPaidJob {
  jobId: string;
  status: 'pending';
  /** `/api/v1/jobs/{jobId}`, also the `Location` header. */
  statusUrl: string;
  etaMinutes: number;
  proveSessionId?: string;
}

/**
 * Starts a paid compute job (docs/architecture.md, "How a compute job flows (market-intel -> RabbitMQ
 * -> pipeline-runner)"): paid on devnet, takes a place under the client's and the global daily caps;
 * then commits the job row, its first step command in the outbox and the payment claim's completion in
 * one transaction (with the payer wallet's daily devnet count inside it), and publishes the step
 * without waiting. When no job is created, the places and the payment's claim are given back, so the
 * payment is verified but not consumed and the agent can retry without paying again.
 * @throws AppError `rate_limited` (429, `Retry-After`) under a devnet cap, `payment_conflict` when the
 *   claim was lost to another request; whatever building the input or the database throws
 */
export async function startPaidJob(ports: PaidJobPorts, request: PaidJobRequest): Promise<StartedPaidJob> {
  const { kind, route, payment, proveSessionId } = request;
  const devnet = payment.network === 'solana-devnet';
  const jobId = newJobId();
  let outboxId: bigint;
  let places: TakenPlace[] = [];
  try {
    if (devnet && ports.devnetCaps) places = await takeDevnetPlaces(ports.devnetCaps, request.clientIp);
    const input = await request.buildInput();
    ({ outboxId } = await ports.jobs.createPaidJob(
      {
        id: jobId,
        kind,
        endpoint: route.endpoint,
        input,
        txSignature: payment.signature,
        network: payment.network,
        payer: payment.payer,
        amountAtomic: route.amountAtomic,
        webhookUrl: request.webhookUrl,
        proveSessionId,
      },
      {
        perPayerPerDay: devnet ? ports.devnetJobsPerDay : undefined,
        inTransaction: (tx) => ports.ledger.completeWithJob(payment.claim, jobId, tx),
      },
    ));
  } catch (err) {
    await giveBack(places);
    await ports.ledger.releaseLease(payment.claim).catch(() => undefined);
    throw err;
  }
  ports.onJobCreated?.(kind);
  // Not awaited: the answer does not wait for RabbitMQ; a failed publish is left to the outbox sweep.
  void ports.publishNow([outboxId]);
  return {
    jobId,
    status: 'pending',
    statusUrl: `/api/v1/jobs/${jobId}`,
    etaMinutes: ETA_MINUTES[kind],
    ...(proveSessionId ? { proveSessionId } : {}),
  };
}

import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import { AppError, notFound, requestIdOf } from '@repo/errors';
import { AgentJob } from '@repo/schemas';
import type { Pool } from 'pg';
import {
  clientIpKey,
  contractRouter,
  createRateLimit,
  errorResponse,
  validated,
  type ContractRouter,
  type RateLimit,
} from '@repo/service-kit';
import { checkUrl, type SsrfPolicy } from '@repo/ssrf-guard';
import {
  acceptPayment,
  recordPaymentSighting,
  type AcceptPaymentOptions,
  type PaymentGateway,
} from '@repo/x402-express';
import type { JobRepository } from '../../data/jobs';
import { newJobId } from '../../data/jobs';
import type { ReportRepository } from '../../data/reports';
import {
  FORGE_SCOUT_ITEMS,
  ForgeRequest,
  JobParams,
  ProveRequest,
  type ComputeUnavailable,
  NetworkOnlyQuery,
} from '../../schemas';
import { RETRY_AFTER_SECONDS, type HealthProbe } from '../../domain/health';
import { COMPUTE_PRICES, ETA_MINUTES, type PaidRoute } from '../../domain/prices';
import { PAYMENT_RESPONSE_HEADER, PAYMENT_V2_RESPONSE_HEADER } from '@repo/x402-core';
import { paidComputeParts, PAYMENT_REQUEST_HEADERS } from './contract-parts';
import { DISCOVERY } from './discovery';

/** What the Compute API needs; without it the compute endpoints answer 503 `config`. */
export interface ComputeDeps {
  jobs: JobRepository;
  reports: ReportRepository;
  /** The compute preflight (runner heartbeats + broker). */
  health: HealthProbe;
  gateway: PaymentGateway;
  /** Advertised `maxTimeoutSeconds`. */
  maxTimeoutSeconds: number;
  /** Publishes the job's first step right after the commit; never rejects (the outbox sweep covers failures). */
  publishNow(outboxIds: readonly bigint[]): Promise<void>;
  /** Webhook settings; `null` when no signing secret is configured (a `webhook_url` is then refused). */
  webhooks: { policy: SsrfPolicy } | null;
  /** Called when a job was created (metrics). */
  onJobCreated?: (kind: 'forge' | 'prove') => void;
  /** Compute jobs one payer wallet may start with devnet payments per 24 hours; absent: no limit. */
  devnetJobsPerDay?: number;
  /** The per-client and global caps on devnet jobs ({@link createDevnetComputeCaps}); absent: none. */
  devnetCaps?: DevnetComputeCaps;
}

/**
 * The caps on compute jobs paid with devnet USDC beyond the per-wallet one (README, "Configuration";
 * root README, "Devnet"): wallets cost nothing, so jobs are also counted per client (IPv4 address, or
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

/**
 * The Compute API (services/market-intel/README.md, "Endpoints"; root README.md, "Failed jobs and
 * health (market-intel)"): `POST /api/v1/forge/ideate`, `POST /api/v1/prove/debate` and the free
 * `GET /api/v1/jobs/{jobId}`, each declared with its contract; mount the router at the root (its
 * paths are absolute). Order on a compute POST, so that nothing is charged for a request that cannot
 * run: body validation (422) and the webhook address check (422), then the health preflight (503 with
 * `Retry-After` and `errorClass`, no payment requested), then x402 (402 / 400 / 409), then, paid on
 * devnet, the client's and the global daily caps and the payer's (429 with `Retry-After`, the payment
 * verified but not consumed), then the job and its first step message are committed together and the
 * answer is 202.
 * @param deps the Compute API's dependencies; `undefined` makes the POSTs answer 503 `config` and
 *   every job id unknown (404)
 */
export function computeRouter(deps: ComputeDeps | undefined): ContractRouter {
  return contractRouter()
    .route(
      {
        method: 'post',
        path: '/api/v1/forge/ideate',
        operationId: 'forgeIdeate',
        ...paidComputeParts(COMPUTE_PRICES.forge, 'about 30 minutes'),
        request: { query: NetworkOnlyQuery, body: ForgeRequest, headers: PAYMENT_REQUEST_HEADERS },
        validation: { bodyCode: 'validation_failed' },
      },
      preflight(deps, COMPUTE_PRICES.forge, (req) => (req.body as ForgeRequest).webhook_url),
      async (req, res) => {
        if (!deps) return;
        const body = validated<unknown, unknown, ForgeRequest>(res.locals).body;
        const sectors = [...new Set(body.sectors)];
        await createJob(
          deps,
          req,
          res,
          COMPUTE_PRICES.forge,
          'forge',
          body.webhook_url ?? null,
          null,
          async () => ({
            sectors,
            context: body.context ?? null,
            product_modes: body.product_modes,
            session_config: body.session_config,
            scout: await deps.reports.latestSnapshots(sectors, FORGE_SCOUT_ITEMS),
          }),
        );
      },
    )
    .route(
      {
        method: 'post',
        path: '/api/v1/prove/debate',
        operationId: 'proveDebate',
        ...paidComputeParts(COMPUTE_PRICES.prove, 'about 60 minutes'),
        request: { query: NetworkOnlyQuery, body: ProveRequest, headers: PAYMENT_REQUEST_HEADERS },
        validation: { bodyCode: 'validation_failed' },
      },
      preflight(deps, COMPUTE_PRICES.prove, (req) => (req.body as ProveRequest).webhook_url),
      async (req, res) => {
        if (!deps) return;
        const body = validated<unknown, unknown, ProveRequest>(res.locals).body;
        const proveSessionId = randomUUID();
        await createJob(
          deps,
          req,
          res,
          COMPUTE_PRICES.prove,
          'prove',
          body.webhook_url ?? null,
          proveSessionId,
          async () => ({
            idea: body.idea,
            session_config: body.session_config,
            proveSessionId,
          }),
        );
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/v1/jobs/{jobId}',
        operationId: 'getJob',
        summary: 'A compute job (free; possession of the id is the authorization)',
        tags: ['Compute API'],
        request: { params: JobParams, query: NetworkOnlyQuery },
        responses: {
          '200': { description: 'the job', body: AgentJob },
          '400': errorResponse(
            'invalid path or query (`invalid_request`): jobId longer than 100 characters or not valid percent-encoding, or network not one of the accepted values',
          ),
          '404': errorResponse('unknown job'),
        },
      },
      async (_req, res) => {
        const { jobId } = validated<unknown, { jobId: string }>(res.locals).params;
        const job = deps ? await deps.jobs.get(jobId) : null;
        if (!job) throw notFound('Unknown job');
        res.setHeader('cache-control', 'no-store');
        res.json(job);
      },
    );
}

/**
 * Webhook address check (422) and health preflight (503), both before any payment is asked. The
 * check resolves the caller's host through c-ares within 2 s (never `dns.lookup`, whose thread pool
 * the database also needs), so an unpaid request cannot hold the pool with slow names.
 */
function preflight(
  deps: ComputeDeps | undefined,
  route: PaidRoute,
  webhookOf: (req: Request) => string | undefined,
): RequestHandler {
  return async (req, res, next) => {
    if (!deps) {
      sendUnhealthy(req, res, 'config', 'Compute is not configured on this server (no message broker)');
      return;
    }
    const webhookUrl = webhookOf(req);
    if (webhookUrl !== undefined) {
      if (!deps.webhooks) {
        throw new AppError(
          'validation_failed',
          'webhook_url is not accepted: webhooks are not enabled on this server',
          {
            details: [{ path: 'body.webhook_url', message: 'webhooks are not enabled on this server' }],
          },
        );
      }
      const check = await checkUrl(webhookUrl, deps.webhooks.policy);
      if (!check.ok) {
        throw new AppError('validation_failed', `webhook_url is not allowed: ${check.error.message}`, {
          details: [{ path: 'body.webhook_url', message: check.error.message }],
        });
      }
    }
    const health = await deps.health();
    if (health.status !== 200) {
      // A payer retrying after Retry-After must not find its payment stale: it was seen now.
      await recordPaymentSighting(req, paymentOptions(deps, route));
      const errorClass = health.body.errorClass ?? 'upstream';
      const why = health.body.llm.ok
        ? (health.body.search?.error ?? 'search unavailable')
        : (health.body.llm.error ?? 'LLM unavailable');
      sendUnhealthy(req, res, errorClass, `Compute is unavailable: ${why}`, {
        llm: health.body.llm,
        search: health.body.search,
      });
      return;
    }
    next();
  };
}

function sendUnhealthy(
  req: Request,
  res: Response,
  errorClass: 'upstream' | 'config',
  message: string,
  details?: unknown,
): void {
  res.setHeader('Retry-After', String(RETRY_AFTER_SECONDS[errorClass]));
  res.setHeader('cache-control', 'no-store');
  const body: ComputeUnavailable = {
    error: message,
    code: 'service_unavailable',
    errorClass,
    ...(details ? { details } : {}),
    requestId: requestIdOf(req),
  };
  res.status(503).json(body);
}

const optionsOf = new WeakMap<ComputeDeps, Map<PaidRoute, AcceptPaymentOptions>>();

/**
 * The payment options of a compute route: its price, description, endpoint and discovery metadata;
 * one object per route, as `acceptPayment` builds a route's requirements once per options object.
 */
function paymentOptions(deps: ComputeDeps, route: PaidRoute): AcceptPaymentOptions {
  let byRoute = optionsOf.get(deps);
  if (!byRoute) optionsOf.set(deps, (byRoute = new Map()));
  let options = byRoute.get(route);
  if (!options) byRoute.set(route, (options = optionsFor(deps, route)));
  return options;
}

function optionsFor(deps: ComputeDeps, route: PaidRoute): AcceptPaymentOptions {
  return {
    ...deps.gateway,
    amountAtomic: route.amountAtomic,
    description: route.description,
    endpoint: route.endpoint,
    mimeType: 'application/json',
    maxTimeoutSeconds: deps.maxTimeoutSeconds,
    kind: 'async',
    discovery: route === COMPUTE_PRICES.forge ? DISCOVERY.forge : DISCOVERY.prove,
  };
}

async function createJob(
  deps: ComputeDeps,
  req: Request,
  res: Response,
  route: PaidRoute,
  kind: 'forge' | 'prove',
  webhookUrl: string | null,
  proveSessionId: string | null,
  buildInput: () => Promise<unknown>,
): Promise<void> {
  const accepted = await acceptPayment(req, res, paymentOptions(deps, route));
  if (!accepted) return;
  const devnet = accepted.requirements.network === 'solana-devnet';
  const jobId = newJobId();
  let outboxId: bigint;
  let places: TakenPlace[] = [];
  try {
    if (devnet && deps.devnetCaps) places = await takeDevnetPlaces(deps.devnetCaps, req.ip);
    const input = await buildInput();
    ({ outboxId } = await deps.jobs.createPaidJob(
      {
        id: jobId,
        kind,
        endpoint: route.endpoint,
        input,
        txSignature: accepted.payment.signature,
        network: accepted.requirements.network,
        payer: accepted.payment.payer,
        amountAtomic: route.amountAtomic,
        webhookUrl,
        proveSessionId,
      },
      deps.gateway.ledger,
      accepted.claim,
      devnet ? deps.devnetJobsPerDay : undefined,
    ));
  } catch (err) {
    // Nothing was written (a failure, or a devnet limit): give the signature back so the agent can
    // retry without paying again, and do not announce a settlement with the refusal; the places the
    // job took under the devnet caps go back too.
    await giveBack(places);
    await deps.gateway.ledger.releaseLease(accepted.claim).catch(() => undefined);
    res.removeHeader(PAYMENT_RESPONSE_HEADER);
    res.removeHeader(PAYMENT_V2_RESPONSE_HEADER);
    throw err;
  }
  deps.onJobCreated?.(kind);
  // Not awaited: the answer does not wait for RabbitMQ; a failed publish is left to the outbox sweep.
  void deps.publishNow([outboxId]);
  const statusUrl = `/api/v1/jobs/${jobId}`;
  res.setHeader('Location', statusUrl);
  res.status(202).json({
    jobId,
    status: 'pending',
    statusUrl,
    etaMinutes: ETA_MINUTES[kind],
    ...(proveSessionId ? { proveSessionId } : {}),
  });
}

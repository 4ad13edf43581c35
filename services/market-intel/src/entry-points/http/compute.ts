import { randomUUID } from 'node:crypto';
import type { Request, RequestHandler, Response } from 'express';
import type { z } from 'zod';
import { notFound, requestIdOf, validationError } from '@repo/errors';
import { AgentJob } from '@repo/schemas';
import { contractRouter, errorResponse, type ContractRouter } from '@repo/service-kit';
import { checkUrl, type SsrfPolicy } from '@repo/ssrf-guard';
import {
  acceptPayment,
  recordPaymentSighting,
  type AcceptPaymentOptions,
  type PaymentGateway,
  type SignedInAccess,
} from '@repo/x402-express';
import type { JobRepository } from '../../data/jobs';
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
import {
  startPaidJob,
  type PaidJobPorts,
  type PaidJobRequest,
  type StartedPaidJob,
} from '../../domain/paid-jobs';
import { COMPUTE_PRICES, ETA_MINUTES, type PaidRoute } from '../../domain/prices';
import { PAYMENT_RESPONSE_HEADER, PAYMENT_V2_RESPONSE_HEADER } from '@repo/x402-core';
import { paidComputeParts, PAYMENT_REQUEST_HEADERS } from './contract-parts';
import { DISCOVERY } from './discovery';

/**
 * What the Compute API needs; without it the compute endpoints answer 503 `config`. `paidJobs` starts
 * a paid job ({@link startPaidJob}); its ledger is the gateway's.
 */
export interface ComputeDeps {
  jobs: Pick<JobRepository, 'get'>;
  reports: Pick<ReportRepository, 'latestSnapshots'>;
  /** The compute preflight (runner heartbeats + broker). */
  health: HealthProbe;
  gateway: PaymentGateway;
  /** Advertised `maxTimeoutSeconds`. */
  maxTimeoutSeconds: number;
  paidJobs: PaidJobPorts;
  /** Webhook settings; `null` when no signing secret is configured (a `webhook_url` is then refused). */
  webhooks: { policy: SsrfPolicy } | null;
}

/**
 * The Compute API (services/market-intel/README.md, "Endpoints"; README, "Failed jobs and
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
  const router = contractRouter();
  computePost(router, deps, 'forge', '/api/v1/forge/ideate', 'forgeIdeate', ForgeRequest, (ready, body) => {
    const sectors = [...new Set(body.sectors)];
    return {
      proveSessionId: null,
      buildInput: async () => ({
        sectors,
        context: body.context ?? null,
        product_modes: body.product_modes,
        session_config: body.session_config,
        scout: await ready.reports.latestSnapshots(sectors, FORGE_SCOUT_ITEMS),
      }),
    };
  });
  computePost(router, deps, 'prove', '/api/v1/prove/debate', 'proveDebate', ProveRequest, (_ready, body) => {
    const proveSessionId = randomUUID();
    return {
      proveSessionId,
      buildInput: async () => ({ idea: body.idea, session_config: body.session_config, proveSessionId }),
    };
  });
  return router.route(
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
      const { jobId } = res.locals.valid.params;
      const job = deps ? await deps.jobs.get(jobId) : null;
      if (!job) throw notFound('job');
      res.setHeader('cache-control', 'no-store');
      res.json(job);
    },
  );
}

/** What every compute POST body may carry besides its own fields. */
type ComputeBody = { webhook_url?: string | undefined };

/**
 * Declares on `router` the POST that starts a paid `kind` job: its contract (see `paidComputeParts`,
 * with the price and duration of the kind; `network` in the query, the body validated with 422
 * `invalid_request`), the preflight, then the payment and the job ({@link createJob}).
 * @param job the job's prove session and input, from the validated body
 */
function computePost<B extends z.ZodType<ComputeBody>>(
  router: ContractRouter,
  deps: ComputeDeps | undefined,
  kind: PaidJobRequest['kind'],
  path: string,
  operationId: string,
  body: B,
  job: (deps: ComputeDeps, body: z.output<B>) => Pick<PaidJobRequest, 'proveSessionId' | 'buildInput'>,
): void {
  const route = COMPUTE_PRICES[kind];
  router.route(
    {
      method: 'post',
      path,
      operationId,
      ...paidComputeParts(route, `about ${ETA_MINUTES[kind]} minutes`),
      // Typed here by what every compute body has, so that the handlers below are not generic.
      request: {
        query: NetworkOnlyQuery,
        body: body as z.ZodType<ComputeBody>,
        headers: PAYMENT_REQUEST_HEADERS,
      },
      validation: { bodyStatus: 422 },
    },
    preflight(deps, route),
    async (req, res) => {
      if (!deps) return;
      const valid = res.locals.valid.body;
      await createJob(deps, req, res, {
        route,
        kind,
        webhookUrl: valid.webhook_url ?? null,
        // Validated with `body` just before: its output.
        ...job(deps, valid as z.output<B>),
      });
    },
  );
}

/**
 * Webhook address check (422 `invalid_request`) and health preflight (503), both before any payment is asked. The
 * check resolves the caller's host through c-ares within 2 s (never `dns.lookup`, whose thread pool
 * the database also needs), so an unpaid request cannot hold the pool with slow names.
 */
function preflight(
  deps: ComputeDeps | undefined,
  route: PaidRoute,
): RequestHandler<Request['params'], unknown, ComputeBody> {
  return async (req, res, next) => {
    if (!deps) {
      sendUnhealthy(req, res, 'config', 'Compute is not configured on this server (no message broker)');
      return;
    }
    const webhookUrl = req.body.webhook_url;
    if (webhookUrl !== undefined) {
      if (!deps.webhooks) {
        throw validationError(
          [
            {
              path: 'body.webhook_url',
              code: 'custom',
              message: 'is not accepted: webhooks are not enabled on this server',
            },
          ],
          422,
        );
      }
      const check = await checkUrl(webhookUrl, deps.webhooks.policy);
      if (!check.ok) {
        throw validationError(
          [{ path: 'body.webhook_url', code: 'custom', message: `is not allowed: ${check.error.message}` }],
          422,
        );
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
    onSignedIn: (access, _req, res) => answerSignedIn(access, res),
  };
}

/**
 * The answer to the payer of a job who signed in within the access window instead of paying again
 * (README, "Paying, in three steps"): `303 See Other` to the job's status, which is free.
 */
function answerSignedIn(access: SignedInAccess, res: Response): void {
  if (access.jobId === null) throw new Error('a completed compute payment without its job');
  res.setHeader('Location', `/api/v1/jobs/${encodeURIComponent(access.jobId)}`);
  res.setHeader('cache-control', 'no-store');
  res.status(303).end();
}

/**
 * Takes the payment, then starts the job ({@link startPaidJob}) and answers 202 with its `Location`.
 * A job that is not created takes back the payment answer's headers: no settlement is announced with
 * the refusal.
 */
async function createJob(
  deps: ComputeDeps,
  req: Request,
  res: Response,
  request: Pick<PaidJobRequest, 'kind' | 'route' | 'webhookUrl' | 'proveSessionId' | 'buildInput'>,
): Promise<void> {
  const accepted = await acceptPayment(req, res, paymentOptions(deps, request.route));
  if (!accepted) return;
  let started: StartedPaidJob;
  try {
    started = await startPaidJob(deps.paidJobs, {
      ...request,
      payment: {
        signature: accepted.payment.signature,
        payer: accepted.payment.payer,
        network: accepted.requirements.network,
        claim: accepted.claim,
      },
      clientIp: req.ip,
    });
  } catch (err) {
    res.removeHeader(PAYMENT_RESPONSE_HEADER);
    res.removeHeader(PAYMENT_V2_RESPONSE_HEADER);
    throw err;
  }
  res.setHeader('Location', started.statusUrl);
  res.status(202).json(started);
}

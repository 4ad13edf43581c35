import { Router } from 'express';
import { ErrorEnvelope } from '@repo/errors';
import {
  AgentJob,
  BriefResponse,
  buildOpenApiDocument,
  Error402,
  GapsResponse,
  HealthResponse,
  KeywordsResponse,
  PainClustersResponse,
  renderReferencePage,
  SectorList,
  TrendsResponse,
  type JsonSchema,
  type OpenApiOperation,
  type OpenApiParameter,
} from '@repo/schemas';
import { ComputeUnavailable, ForgeRequest, JobAccepted, ProveRequest } from '../../domain/compute';
import { COMPUTE_PRICES, DATA_PRICES, type PaidRoute } from '../../domain/prices';

const network: OpenApiParameter = {
  name: 'network',
  in: 'query',
  description:
    '`devnet` selects the test network (its USDC mint and merchant account); default the main network',
  schema: { type: 'string', enum: ['devnet', 'solana-devnet', 'mainnet', 'solana'] },
};
const sector: OpenApiParameter = {
  name: 'sector',
  in: 'query',
  description: 'sector tag (see /api/v1/sectors); omitted: every sector merged',
  schema: { type: 'string', pattern: '^[a-z0-9][a-z0-9-]{0,63}$' },
};
const int = (name: string, min: number, max: number, def: number): OpenApiParameter => ({
  name,
  in: 'query',
  schema: { type: 'integer', minimum: min, maximum: max, default: def },
});

const X402_HEADERS = {
  'x402-version': { description: 'x402 protocol version', schema: { type: 'string', const: '1' } },
  'PAYMENT-REQUIRED': {
    description:
      'x402 v2 offer (when a fee payer is configured): base64 JSON PaymentRequired { x402Version: 2, error, resource, accepts: [{ scheme: "exact", network (CAIP-2), amount, asset, payTo (merchant wallet), maxTimeoutSeconds, extra: { feePayer } }], extensions }',
    schema: { type: 'string' },
  },
};
const PAID_HEADERS = {
  'x402-version': X402_HEADERS['x402-version'],
  'X-PAYMENT-RESPONSE': {
    description: 'base64 JSON { success, transaction, network, payer }',
    schema: { type: 'string' },
  },
  'PAYMENT-RESPONSE': {
    description: 'base64 JSON { success, transaction, network (CAIP-2), payer } (x402 v2)',
    schema: { type: 'string' },
  },
};

const VERIFICATIONS_LIMITED = {
  description:
    'too many payment verifications from this client (IPv4 address or IPv6 /64) on this network this minute ' +
    '(X402_VERIFICATIONS_PER_MINUTE_PER_CLIENT); nothing consumed; retry after Retry-After',
  body: 'ErrorEnvelope',
  headers: { 'Retry-After': { description: 'seconds', schema: { type: 'integer' } } },
};
const BAD_NETWORK = {
  description: 'invalid query: network is not one of the accepted values',
  body: 'ErrorEnvelope',
};

function paid(
  route: PaidRoute,
  path: string,
  operationId: string,
  parameters: OpenApiParameter[],
  body: string,
  extra: Record<string, { description: string; body?: string }> = {},
): OpenApiOperation {
  const usdc = (Number(route.amountAtomic) / 1e6).toFixed(2);
  return {
    method: 'get',
    path,
    operationId,
    summary: `${route.description} (paid: ${usdc} USDC, ${route.amountAtomic} atomic units)`,
    tags: ['Data API'],
    parameters: [...parameters, network],
    security: [{ x402: [] }, { x402v2: [] }],
    extensions: { 'x-price-usdc': usdc, 'x-max-amount-required': route.amountAtomic.toString() },
    responses: {
      '200': {
        description: 'the paid answer (a replay of the same signature returns it again)',
        body,
        headers: PAID_HEADERS,
      },
      '400': {
        description:
          'invalid query (no payment asked), payment reused on another endpoint, amount or mint mismatch',
        body: 'ErrorEnvelope',
      },
      '402': {
        description:
          'payment missing or not acceptable (malformed or wrong-network header, unknown, failed, stale or misdirected transaction; details.reason)',
        body: 'Error402',
        headers: X402_HEADERS,
      },
      '429': VERIFICATIONS_LIMITED,
      ...extra,
      '503': { description: 'the Solana RPC is unreachable; retry later', body: 'ErrorEnvelope' },
    },
  };
}

function compute(
  route: PaidRoute,
  path: string,
  operationId: string,
  body: typeof ForgeRequest | typeof ProveRequest,
  eta: string,
): OpenApiOperation {
  const usdc = (Number(route.amountAtomic) / 1e6).toFixed(2);
  return {
    method: 'post',
    path,
    operationId,
    summary: `${route.description} (paid: ${usdc} USDC, ${route.amountAtomic} atomic units; asynchronous, ${eta})`,
    description:
      'Order of checks: body (422, nothing charged), health preflight (503 with Retry-After and errorClass, no payment asked), ' +
      'then x402. The job runs on the pipeline-runner; poll statusUrl or pass webhook_url (signed with x-service-signature).',
    tags: ['Compute API'],
    parameters: [network],
    requestBody: { body, required: true },
    security: [{ x402: [] }, { x402v2: [] }],
    extensions: { 'x-price-usdc': usdc, 'x-max-amount-required': route.amountAtomic.toString() },
    responses: {
      '202': {
        description: 'job accepted (status pending); Location = statusUrl',
        body: 'JobAccepted',
        headers: PAID_HEADERS,
      },
      '400': {
        description: 'malformed JSON, payment reused on another endpoint, amount or mint mismatch',
        body: 'ErrorEnvelope',
      },
      '402': {
        description:
          'payment missing or not acceptable (malformed or wrong-network header, unknown, failed, stale or misdirected transaction; details.reason)',
        body: 'Error402',
        headers: X402_HEADERS,
      },
      '409': { description: 'this payment already started a job: details.jobId', body: 'ErrorEnvelope' },
      '413': { description: 'body larger than BODY_LIMIT (100 kB by default)', body: 'ErrorEnvelope' },
      '415': { description: 'body not JSON in UTF-8', body: 'ErrorEnvelope' },
      '422': {
        description: 'the body failed validation (field errors in details); no payment consumed',
        body: 'ErrorEnvelope',
      },
      '429': {
        ...VERIFICATIONS_LIMITED,
        description:
          `${VERIFICATIONS_LIMITED.description}; or, paid on devnet, the payer wallet started ` +
          'X402_DEVNET_COMPUTE_PER_DAY jobs in 24 hours (details.limit: payer_per_day; payment verified, not consumed)',
      },
      '503': {
        description:
          'health preflight failed: errorClass upstream (Retry-After 30) or config (Retry-After 600); no payment requested',
        body: 'ComputeUnavailable',
        headers: { 'Retry-After': { description: 'seconds', schema: { type: 'integer' } } },
      },
    },
  };
}

/**
 * The OpenAPI 3.1 document of market-intel (market-intel spec, version 1.0.0), generated from the
 * zod schemas the routes answer with.
 */
export function marketIntelOpenApi(): JsonSchema {
  return buildOpenApiDocument({
    info: {
      title: 'Paid Market-Intelligence Agent API',
      version: '1.0.0',
      description:
        'Pay-per-call market intelligence for software agents, paid in USDC on Solana with x402: ' +
        'request, receive 402 with PaymentRequirements, pay with an SPL transferChecked, retry with X-PAYMENT; ' +
        'or pay the PAYMENT-REQUIRED offer with any official x402 v2 client (PAYMENT-SIGNATURE).',
    },
    components: {
      Error402,
      ErrorEnvelope,
      GapsResponse,
      PainClustersResponse,
      TrendsResponse,
      KeywordsResponse,
      BriefResponse,
      SectorList,
      HealthResponse,
      JobAccepted,
      AgentJob,
      ComputeUnavailable,
    },
    securitySchemes: {
      x402: {
        type: 'apiKey',
        in: 'header',
        name: 'X-PAYMENT',
        description:
          'base64 (or raw) JSON { x402Version: 1, scheme: "exact", network, payload: { txSignature } } (push mode), or { ..., payload: { transaction } } (official exact scheme)',
      },
      x402v2: {
        type: 'apiKey',
        in: 'header',
        name: 'PAYMENT-SIGNATURE',
        description:
          'x402 v2: base64 JSON PaymentPayload { x402Version: 2, accepted (the PAYMENT-REQUIRED offer), payload: { transaction } }',
      },
    },
    operations: [
      paid(
        DATA_PRICES.gaps,
        '/api/v1/scout/gaps',
        'getGaps',
        [sector, int('limit', 1, 100, 20)],
        'GapsResponse',
      ),
      paid(
        DATA_PRICES.painClusters,
        '/api/v1/scout/pain-clusters',
        'getPainClusters',
        [sector, int('limit', 1, 100, 20)],
        'PainClustersResponse',
      ),
      paid(
        DATA_PRICES.trends,
        '/api/v1/scout/trends',
        'getTrends',
        [sector, int('days', 1, 30, 7), int('limit', 1, 100, 20)],
        'TrendsResponse',
      ),
      paid(
        DATA_PRICES.keywords,
        '/api/v1/scout/keywords',
        'getKeywords',
        [sector, int('limit', 1, 200, 50)],
        'KeywordsResponse',
      ),
      paid(DATA_PRICES.brief, '/api/v1/scout/brief', 'getBrief', [], 'BriefResponse', {
        '404': {
          description: 'no completed brief exists (answered before any payment is asked)',
          body: 'ErrorEnvelope',
        },
      }),
      compute(COMPUTE_PRICES.forge, '/api/v1/forge/ideate', 'forgeIdeate', ForgeRequest, 'about 30 minutes'),
      compute(COMPUTE_PRICES.prove, '/api/v1/prove/debate', 'proveDebate', ProveRequest, 'about 60 minutes'),
      {
        method: 'get',
        path: '/api/v1/jobs/{jobId}',
        operationId: 'getJob',
        summary: 'A compute job (free; possession of the id is the authorization)',
        tags: ['Compute API'],
        parameters: [{ name: 'jobId', in: 'path', required: true, schema: { type: 'string' } }, network],
        responses: {
          '200': { description: 'the job', body: 'AgentJob' },
          '400': BAD_NETWORK,
          '404': { description: 'unknown job', body: 'ErrorEnvelope' },
        },
      },
      {
        method: 'get',
        path: '/api/v1/sectors',
        operationId: 'listSectors',
        summary: 'Sectors with stored reports (free); call before paying for sector-filtered data',
        tags: ['Discovery'],
        parameters: [network],
        responses: { '200': { description: 'the sector list', body: 'SectorList' }, '400': BAD_NETWORK },
      },
      {
        method: 'get',
        path: '/api/v1/health',
        operationId: 'getHealth',
        summary: 'Health of the compute upstreams (free)',
        tags: ['Discovery'],
        parameters: [network],
        responses: {
          '200': { description: 'healthy', body: 'HealthResponse' },
          '400': BAD_NETWORK,
          '503': {
            description: 'unhealthy: errorClass upstream (Retry-After 30) or config (Retry-After 600)',
            body: 'HealthResponse',
            headers: { 'Retry-After': { description: 'seconds', schema: { type: 'integer' } } },
          },
        },
      },
    ],
  });
}

/** `GET /openapi.json` and the rendered reference page `GET /docs`. */
export function openApiRouter(): Router {
  const doc = marketIntelOpenApi();
  const page = renderReferencePage(doc);
  const router = Router();
  router.get('/openapi.json', (_req, res) => {
    res.json(doc);
  });
  router.get('/docs', (_req, res) => {
    // helmet's default CSP allows the inline style of the page.
    res.type('html').send(page);
  });
  return router;
}

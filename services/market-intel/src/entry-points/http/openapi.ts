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
  SectorList,
  TrendsResponse,
  type JsonSchema,
  type OpenApiOperation,
} from '@repo/schemas';
import { withExamples, packageVersion } from '@repo/service-kit';
import { ComputeUnavailable, JobAccepted } from '../../schemas';
import { COMPUTE_PRICES, DATA_PRICES } from '../../domain/prices';
import { PAYING_README_LINK, payingSteps, usdc, X402_HEADER_COMPONENTS } from './contract-parts';
// Real answers, captured from the running service by test/openapi-examples.test.ts (UPDATE_OPENAPI_EXAMPLES=1).
import EXAMPLES from './examples.json';

/** The version of market-intel's contract, in the OpenAPI document and MCP's `initialize`.: the `version` of the service's package.json, its one version number. */
export const SERVICE_VERSION = packageVersion(__dirname);

/**
 * The document's description (Markdown): what the service sells, every price from the price tables
 * the routes are bound to, and how to pay, in three steps, with the README link.
 */
const DESCRIPTION = [
  'Pay-per-call market intelligence for software agents, paid in USDC on Solana with x402. ' +
    '`/api/v1/sectors`, `/api/v1/health` and `/api/v1/jobs/{jobId}` are free.',
  '**Prices** per call, in atomic USDC units (6 decimals):\n' +
    [...Object.values(DATA_PRICES), ...Object.values(COMPUTE_PRICES)]
      .map((route) => `- \`${route.endpoint}\`: ${route.amountAtomic} (${usdc(route)} USDC)`)
      .join('\n'),
  `**Paying, in three steps** (${PAYING_README_LINK}):`,
  payingSteps("exactly the route's `maxAmountRequired` atomic units"),
].join('\n\n');

/**
 * The OpenAPI 3.1 document of market-intel, version 1.0.0 (services/market-intel/README.md,
 * "Endpoints", its `/openapi.json` paragraph). This file holds only the
 * document level (info with the prices and the payment steps, the named schemas, the x402 security
 * schemes); the operations come from the routes' own contracts (`ContractRouter.operations` of
 * free.ts, data-api.ts and compute.ts), so the document describes exactly what the routes validate
 * and answer. A response body that is one of the named schemas is a `$ref` to it.
 * @param operations the operations of the routers, in mount order
 * @throws Error when an operation names a component that does not exist
 */
export function marketIntelOpenApi(operations: readonly OpenApiOperation[]): JsonSchema {
  return buildOpenApiDocument({
    info: { title: 'Paid Market-Intelligence Agent API', version: SERVICE_VERSION, description: DESCRIPTION },
    components: {
      ...X402_HEADER_COMPONENTS,
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
      siwx: {
        type: 'apiKey',
        in: 'header',
        name: 'SIGN-IN-WITH-X',
        description:
          'x402 sign-in-with-x (when on): base64 JSON of the PAYMENT-REQUIRED challenge signed by the wallet that paid; gets a request paid within the access window again without paying (docs/payments.md, "Signing in instead of paying again")',
      },
    },
    operations: withExamples(operations, EXAMPLES),
  });
}

import { ErrorEnvelope } from '@repo/errors';
import {
  buildOpenApiDocument,
  type JsonSchema,
  type OpenApiOperation,
  type OpenApiParameter,
} from '@repo/schemas';
import { withExamples, packageVersion } from '@repo/service-kit';
import { Me } from '../../schemas/accounts';
import { Context } from '../../schemas/contexts';
import { CreatedProduct } from '../../schemas/products';
import { AnalysisRunResult, Proposal } from '../../schemas/proposals';
import { ReceivedResponse } from '../../schemas/signals';
import { CSRF_HEADER } from './auth-middleware';
// Real answers, captured from the running service by test/openapi-examples.test.ts (UPDATE_OPENAPI_EXAMPLES=1).
import EXAMPLES from './examples.json';

/** The service's version: of the OpenAPI document and of the MCP server (`initialize`).: the `version` of the service's package.json, its one version number. */
export const SERVICE_VERSION = packageVersion(__dirname);

/**
 * Security requirement of the operations authenticated by a product key (README, "API keys"): in
 * `x-api-key`, or as `Authorization: Bearer <key>` (docs/architecture.md, "One error dialect").
 */
export const KEY_SECURITY: Record<string, string[]>[] = [{ apiKey: [] }, { bearer: [] }];

/** Security requirement of the operations that need a dashboard session (README, "Sessions and CSRF"). */
export const SESSION_SECURITY: Record<string, string[]>[] = [{ session: [] }];

/**
 * The `x-csrf-token` header every cookie-authenticated write sends (README, "Sessions and CSRF"):
 * documented on the operations a session may write with; checked by `requireCsrf`, not by the routes.
 */
export const CSRF_HEADER_PARAMETER: OpenApiParameter = {
  name: CSRF_HEADER,
  in: 'header',
  required: true,
  description: 'the csrf_token of GET /api/auth/me (session writes only)',
  schema: { type: 'string' },
};

/**
 * The OpenAPI 3.1 document of signal-feedback (README, "Endpoints"; document version 1.0.0): the
 * document-level parts (info, the response components, the `apiKey`, `bearer`, `apiKeyQuery` and `session`
 * security schemes) around the operations the routes declare (see `contractRouter`), so the document
 * lists exactly what the routes validate and answer.
 * @param operations the operations of the contract routers, in the order the document lists them
 * @returns the document as served at `GET /openapi.json`
 * @throws Error when an operation names a component that does not exist
 */
export function signalFeedbackOpenApi(operations: readonly OpenApiOperation[]): JsonSchema {
  return buildOpenApiDocument({
    info: {
      title: 'Product-Signal Feedback Service',
      version: SERVICE_VERSION,
      description:
        'Products send user signals with an spk_ key; the service classifies them per context, counts them against the plan quota ' +
        'and turns them into improvement proposals. Errors use the envelope { error, code, details?, requestId }.',
    },
    components: { ErrorEnvelope, ReceivedResponse, Proposal, CreatedProduct, Context, Me, AnalysisRunResult },
    securitySchemes: {
      apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'product key, spk_...' },
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description:
          'the same product key (spk_...) as Authorization: Bearer <key>, wherever x-api-key is accepted',
      },
      apiKeyQuery: { type: 'apiKey', in: 'query', name: 'key', description: 'product key for /api/ingest' },
      session: {
        type: 'apiKey',
        in: 'cookie',
        name: 'sf_session',
        description: '__Host-sf_session when cookies are Secure; writes also need x-csrf-token',
      },
    },
    operations: withExamples(operations, EXAMPLES),
  });
}

import { ErrorEnvelope } from '@repo/errors';
import { buildOpenApiDocument, type JsonSchema, type OpenApiOperation } from '@repo/schemas';
import { withExamples } from '@repo/service-kit';
import {
  CreateKeyResponse,
  HealthResponse,
  RegisterSkillResponse,
  ReportResponse,
  RouteResponse,
  SkillDetail,
  SkillList,
} from '../../schemas';
// Real answers, captured from the running service by test/openapi-examples.test.ts (UPDATE_OPENAPI_EXAMPLES=1).
import EXAMPLES from './examples.json';
import { SERVICE_VERSION } from './public';

/** The README section on keys, as a Markdown link (GitHub's anchor of its heading). */
const KEYS_README_LINK = '[services/skill-router/README.md, "Keys"](services/skill-router/README.md#keys)';

/**
 * How to get and send a key (README, "Endpoints" and "Keys"), in Markdown: said once, in the
 * document's description and in the `apiKey` scheme's.
 */
const GETTING_A_KEY =
  '`POST /api/auth/key` with `{"name": "my-agent"}` (1–100 characters; no key needed) answers `201` with ' +
  '`api_key`, an `sk_router_` key shown only this once: store it, the service keeps only its SHA-256 hash. ' +
  'Send it as the `x-api-key` header (**Authorize** on this page). At most `KEY_CREATION_LIMIT_PER_MINUTE` keys ' +
  'a minute per client address (5 by default); beyond, `429 rate_limited` with `Retry-After` in seconds. ' +
  `See ${KEYS_README_LINK}.`;

/**
 * The OpenAPI 3.1 document of skill-router (README, "Endpoints" and "Keys"): the document-level parts
 * (info with how to get a key, components, the `x-api-key` scheme) around the operations the routes
 * declare (see `contractRouter`), so the document lists exactly what the routes validate and answer.
 * @param operations the operations of the mounted contract routers, in mount order
 * @throws Error when an operation names a component that does not exist
 */
export function skillRouterOpenApi(operations: readonly OpenApiOperation[]): JsonSchema {
  return buildOpenApiDocument({
    info: {
      title: 'Agent-Skill Directory and Routing Service',
      version: SERVICE_VERSION,
      description:
        'Find, rank, register and rate agent skills. Create a key, browse skills, route a task (weighted score of ' +
        'capability_match 0.35, chain_match 0.20, price_fit 0.15, reliability 0.15, latency_fit 0.10, popularity 0.05), report the result.' +
        '\n\n**Getting a key.** Routing a task, registering a skill and reporting a call need a key; listing and ' +
        `reading skills do not. ${GETTING_A_KEY}`,
    },
    components: {
      ErrorEnvelope,
      HealthResponse,
      CreateKeyResponse,
      RouteResponse,
      SkillList,
      SkillDetail,
      RegisterSkillResponse,
      ReportResponse,
    },
    securitySchemes: {
      apiKey: {
        type: 'apiKey',
        in: 'header',
        name: 'x-api-key',
        description: `An \`sk_router_\` key. ${GETTING_A_KEY}`,
      },
      bearer: {
        type: 'http',
        scheme: 'bearer',
        description:
          'the same `sk_router_` key as `Authorization: Bearer <key>`, wherever `x-api-key` is accepted',
      },
    },
    operations: withExamples(operations, EXAMPLES),
  });
}

/** What every operation that needs `x-api-key` and takes a JSON body may also answer. */
export const AUTHENTICATED_BODY_ERRORS = {
  '400': {
    description:
      'invalid JSON (`invalid_json`), or a field failed validation or is not a field of the operation (`invalid_request`, each problem in details.issues)',
    body: ErrorEnvelope,
  },
  '401': {
    description: 'missing or unknown key in x-api-key or Authorization: Bearer (`unauthorized`)',
    body: ErrorEnvelope,
  },
};

import { Router } from 'express';
import { z } from 'zod';
import { ErrorEnvelope } from '@repo/errors';
import {
  buildOpenApiDocument,
  renderReferencePage,
  type JsonSchema,
  type OpenApiOperation,
} from '@repo/schemas';
import {
  AnalysisRunResult,
  Context,
  CreateContextBody,
  CreatedProduct,
  CreateProductBody,
  Credentials,
  IngestSignalInput,
  Me,
  ProductSummary,
  Proposal,
  ProposalStatusChange,
  ReceivedResponse,
  SignalInput,
  SignupBody,
  UpdateContextBody,
} from '../../schemas';

const err = (description: string) => ({ description, body: 'ErrorEnvelope' });
/** What the JSON body parser answers for any operation with a body, before the route runs. */
const BODY_ERRORS = {
  '413': err('the body is larger than the configured limit (BODY_LIMIT; `payload_too_large`)'),
  '415': err('the body is not UTF-8 JSON: another charset or content-encoding (`unsupported_media_type`)'),
};
const KEY = [{ apiKey: [] }];
const SESSION = [{ session: [] }];
const csrfHeader = {
  name: 'x-csrf-token',
  in: 'header' as const,
  required: true,
  description: 'the csrf_token of GET /api/auth/me (session writes only)',
  schema: { type: 'string' },
};

/**
 * The OpenAPI 3.1 document of signal-feedback (README, "Endpoints"; document version 1.0.0),
 * generated from the zod schemas.
 * @param maxBatch the configured maximum batch size, written into the descriptions
 */
export function signalFeedbackOpenApi(maxBatch = 1000): JsonSchema {
  const batch = z.union([SignalInput, z.array(SignalInput).max(maxBatch)]);
  const ingestBatch = z.union([IngestSignalInput, z.array(IngestSignalInput).max(maxBatch)]);
  const ingestErrors = {
    '400': err('invalid JSON, missing or invalid signal type, or a context_id of another product'),
    '401': err('API key missing or invalid'),
    '413': err(
      `more than ${maxBatch} signals in one batch (details.max_batch_size), or a body larger than the configured limit`,
    ),
    '415': err('body not sent as application/json, or not in UTF-8'),
    '429': err(
      'the batch would cross the monthly signal limit of the plan; nothing stored (Retry-After: seconds to the month reset)',
    ),
  };
  const operations: OpenApiOperation[] = [
    {
      method: 'post',
      path: '/api/signals',
      operationId: 'sendSignals',
      summary: `Send one signal or an array of up to ${maxBatch} (all or nothing)`,
      tags: ['Signals'],
      security: KEY,
      requestBody: { body: batch, required: true },
      responses: {
        '200': { description: 'number of signals accepted', body: 'ReceivedResponse' },
        ...ingestErrors,
      },
    },
    {
      method: 'post',
      path: '/api/ingest',
      operationId: 'ingest',
      summary:
        'Automation-friendly ingest: key in ?key= or x-api-key; type/event/event_type and payload/data/properties',
      tags: ['Signals'],
      security: [{ apiKeyQuery: [] }, { apiKey: [] }],
      requestBody: { body: ingestBatch, required: true },
      responses: {
        '200': { description: 'number of signals accepted', body: 'ReceivedResponse' },
        ...ingestErrors,
      },
    },
    {
      method: 'get',
      path: '/api/proposals',
      operationId: 'listProposals',
      summary:
        "Proposals, highest priority first (API key: the key's product; session: all the user's products)",
      tags: ['Proposals'],
      security: [...KEY, ...SESSION],
      parameters: [
        {
          name: 'status',
          in: 'query',
          schema: { type: 'string', enum: ['pending', 'approved', 'rejected', 'deferred'] },
        },
        { name: 'limit', in: 'query', schema: { type: 'integer', minimum: 1, maximum: 200, default: 50 } },
        {
          name: 'product_id',
          in: 'query',
          description: 'session: only this product',
          schema: { type: 'string', format: 'uuid' },
        },
      ],
      responses: {
        '200': { description: 'the proposals', body: z.array(Proposal) },
        '400': err('invalid query'),
        '401': err('no key and no session'),
      },
    },
    {
      method: 'patch',
      path: '/api/proposals/{id}',
      operationId: 'changeProposalStatus',
      summary:
        "Change a proposal's status: pending -> approved|rejected|deferred, deferred -> pending|approved|rejected",
      tags: ['Proposals'],
      security: [...KEY, ...SESSION],
      parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } }],
      requestBody: { body: ProposalStatusChange, required: true },
      responses: {
        '200': { description: 'the updated proposal', body: 'Proposal' },
        '400': err('invalid status or id'),
        ...BODY_ERRORS,
        '401': err('no key and no session'),
        '403': err('session write without x-csrf-token'),
        '404': err('no such proposal for this key or user'),
        '409': err('transition not allowed (details.from, details.allowed)'),
      },
    },
    {
      method: 'post',
      path: '/api/analysis/run',
      operationId: 'runAnalysis',
      summary: "Analyse the signed-in user's contexts now (the schedule does it periodically)",
      tags: ['Proposals'],
      security: SESSION,
      parameters: [csrfHeader],
      responses: {
        '200': { description: 'what the pass did', body: 'AnalysisRunResult' },
        '401': err('not signed in'),
        '403': err('CSRF check failed'),
      },
    },
    {
      method: 'post',
      path: '/api/products',
      operationId: 'createProduct',
      summary: 'Create a product; the spk_ key is returned this once',
      tags: ['Products'],
      security: SESSION,
      parameters: [csrfHeader],
      requestBody: { body: CreateProductBody, required: true },
      responses: {
        '200': { description: 'the product with its key', body: 'CreatedProduct' },
        '400': err('invalid name'),
        ...BODY_ERRORS,
        '401': err('not signed in'),
        '403': err(
          'product limit of the plan reached (code product_limit_reached) or CSRF check failed (csrf_failed)',
        ),
      },
    },
    {
      method: 'post',
      path: '/api/products/{id}/rotate-key',
      operationId: 'rotateProductKey',
      summary:
        "Replace a product's spk_ key: the new key is returned this once and the old one stops working",
      tags: ['Products'],
      security: SESSION,
      parameters: [
        { name: 'id', in: 'path', required: true, schema: { type: 'string', format: 'uuid' } },
        csrfHeader,
      ],
      responses: {
        '200': { description: 'the product with its new key', body: 'CreatedProduct' },
        '400': err('invalid id'),
        '401': err('not signed in'),
        '403': err('CSRF check failed'),
        '404': err('no such product of the user'),
      },
    },
    {
      method: 'get',
      path: '/api/products',
      operationId: 'listProducts',
      summary: "The user's products (key prefix only)",
      tags: ['Products'],
      security: SESSION,
      responses: {
        '200': { description: 'products', body: z.array(ProductSummary) },
        '401': err('not signed in'),
      },
    },
    {
      method: 'post',
      path: '/api/context',
      operationId: 'createContext',
      summary: "Create a context in one of the user's products",
      tags: ['Contexts'],
      security: SESSION,
      parameters: [csrfHeader],
      requestBody: { body: CreateContextBody, required: true },
      responses: {
        '201': { description: 'the created context', body: 'Context' },
        '400': err('invalid body'),
        ...BODY_ERRORS,
        '401': err('not signed in'),
        '403': err('CSRF check failed'),
        '404': err('no such product of the user'),
      },
    },
    {
      method: 'get',
      path: '/api/context',
      operationId: 'listContexts',
      summary: "All contexts of the user's products",
      tags: ['Contexts'],
      security: SESSION,
      responses: { '200': { description: 'contexts', body: z.array(Context) }, '401': err('not signed in') },
    },
    {
      method: 'patch',
      path: '/api/context',
      operationId: 'updateContext',
      summary: "Change fields of one of the user's contexts",
      tags: ['Contexts'],
      security: SESSION,
      parameters: [csrfHeader],
      requestBody: { body: UpdateContextBody, required: true },
      responses: {
        '200': { description: 'the updated context', body: 'Context' },
        '400': err('invalid body'),
        ...BODY_ERRORS,
        '401': err('not signed in'),
        '403': err('CSRF check failed'),
        '404': err('no such context of the user'),
      },
    },
    {
      method: 'delete',
      path: '/api/context',
      operationId: 'deleteContext',
      summary: "Delete one of the user's contexts with its proposals (its signals stay, unrouted)",
      tags: ['Contexts'],
      security: SESSION,
      parameters: [
        { name: 'id', in: 'query', required: true, schema: { type: 'string', format: 'uuid' } },
        csrfHeader,
      ],
      responses: {
        '200': { description: 'deleted', body: z.object({ id: z.uuid(), deleted: z.literal(true) }) },
        '400': err('invalid id'),
        '401': err('not signed in'),
        '403': err('CSRF check failed'),
        '404': err('no such context of the user'),
      },
    },
    {
      method: 'post',
      path: '/api/auth/signup',
      operationId: 'signup',
      summary: 'Create an account (Free plan) and sign in: sets the session cookie',
      tags: ['Accounts'],
      requestBody: { body: SignupBody, required: true },
      responses: {
        '201': { description: 'signed in', body: 'Me' },
        '400': err('invalid e-mail or password under 10 characters'),
        ...BODY_ERRORS,
        '403': err('cross-origin request'),
        '409': err('e-mail taken'),
        '429': err('too many sign-ups from this address'),
      },
    },
    {
      method: 'post',
      path: '/api/auth/login',
      operationId: 'login',
      summary: 'Sign in: sets the session cookie',
      tags: ['Accounts'],
      requestBody: { body: Credentials, required: true },
      responses: {
        '200': { description: 'signed in', body: 'Me' },
        '400': err('invalid body'),
        ...BODY_ERRORS,
        '401': err('wrong e-mail or password'),
        '403': err('cross-origin request'),
        '429': err('too many attempts (Retry-After)'),
      },
    },
    {
      method: 'post',
      path: '/api/auth/logout',
      operationId: 'logout',
      summary:
        'Sign out: deletes the session and clears the cookie (without a session: nothing to do, 204 all the same)',
      tags: ['Accounts'],
      // The session is optional: signing out is idempotent.
      security: [...SESSION, {}],
      parameters: [csrfHeader],
      responses: { '204': { description: 'signed out' }, '403': err('CSRF check failed') },
    },
    {
      method: 'get',
      path: '/api/auth/me',
      operationId: 'me',
      summary: "The signed-in user, plan limits, this month's usage and the CSRF token",
      tags: ['Accounts'],
      security: SESSION,
      responses: { '200': { description: 'the user', body: 'Me' }, '401': err('not signed in') },
    },
  ];
  return buildOpenApiDocument({
    info: {
      title: 'Product-Signal Feedback Service',
      version: '1.0.0',
      description:
        'Products send user signals with an spk_ key; the service classifies them per context, counts them against the plan quota ' +
        'and turns them into improvement proposals. Errors use the envelope { error, code, details?, requestId }.',
    },
    components: { ErrorEnvelope, ReceivedResponse, Proposal, CreatedProduct, Context, Me, AnalysisRunResult },
    securitySchemes: {
      apiKey: { type: 'apiKey', in: 'header', name: 'x-api-key', description: 'product key, spk_...' },
      apiKeyQuery: { type: 'apiKey', in: 'query', name: 'key', description: 'product key for /api/ingest' },
      session: {
        type: 'apiKey',
        in: 'cookie',
        name: 'sf_session',
        description: '__Host-sf_session when cookies are Secure; writes also need x-csrf-token',
      },
    },
    operations,
  });
}

/** `GET /openapi.json` and the rendered reference page `GET /docs`. */
export function openApiRouter(maxBatch?: number): Router {
  const doc = signalFeedbackOpenApi(maxBatch);
  const page = renderReferencePage(doc);
  const router = Router();
  router.get('/openapi.json', (_req, res) => {
    res.json(doc);
  });
  router.get('/docs', (_req, res) => {
    res.type('html').send(page);
  });
  return router;
}

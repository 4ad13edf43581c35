import type { Request, RequestHandler } from 'express';
import { z } from 'zod';
import { AppError } from '@repo/errors';
import { contractRouter, errorResponse, RETRY_AFTER_HEADER, type ContractRouter } from '@repo/service-kit';
import type { SignalRepository } from '../../data/signals';
import { acceptSignals, parseSignalBatch } from '../../domain/ingest';
import type { SignalFeedbackEvents } from '../../metrics';
import { IngestSignalInput, ReceivedResponse, SignalInput } from '../../schemas/signals';
import { countIngestion, type ProductKeyCache } from '../../domain/product-key';
import { apiKeyAuth, requiredKeyOwner } from './auth-middleware';
import { KEY_SECURITY } from './openapi';

/** A body was sent but not as JSON: 415 rather than a confusing "missing type". */
function requireJsonBody(req: Request): void {
  const hasBody =
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') ||
    req.headers['transfer-encoding'] !== undefined;
  if (req.body === undefined && hasBody && !req.is('application/json')) {
    throw new AppError('unsupported_media_type', 'Send signals as JSON with Content-Type: application/json');
  }
}

/**
 * POST /api/signals and POST /api/ingest (README, "Endpoints" and "Batch size"): one signal or an
 * array of up to `maxBatch`, authenticated by the product API key (for /api/ingest also `?key=`, which
 * wins); 200 `{ received }`. All or nothing: 400 for an invalid signal, 413 beyond `maxBatch`, 429
 * `quota_exceeded` (with Retry-After) when the batch would cross the plan's monthly limit.
 */
export function signalsRoutes(deps: {
  signals: SignalRepository;
  keys: ProductKeyCache;
  /** Largest accepted batch (MAX_BATCH_SIZE), also written into the document. */
  maxBatch: number;
  now: () => Date;
  events?: SignalFeedbackEvents;
}): ContractRouter {
  const { maxBatch } = deps;
  // zod's ahead-of-time compiled parsers: a valid signal takes the generated fast path, an invalid one
  // the regular parser, so refusals read exactly as before.
  const signalInput = z.compile(SignalInput);
  const ingestSignalInput = z.compile(IngestSignalInput);

  const handler =
    (schema: z.ZodType<SignalInput, unknown>): RequestHandler =>
    async (req, res) => {
      const count = Array.isArray(req.body) ? req.body.length : 1;
      const result = await countIngestion(deps.events, count, () => {
        requireJsonBody(req);
        const batch = parseSignalBatch(req.body, schema, deps.maxBatch);
        return acceptSignals(deps.signals, deps.keys, requiredKeyOwner(res), batch, deps.now());
      });
      res.json(result);
    };

  const responses = {
    '200': {
      description:
        'number of signals accepted; a retried batch whose messageIds were already received answers 200 too, ' +
        'with those signals counted in duplicates (not stored or counted against the quota again)',
      body: ReceivedResponse,
    },
    '400': errorResponse(
      'invalid JSON, missing or invalid signal type, a timestamp outside 7 days before to 10 minutes after ' +
        'the time of receipt (details names body.<index>.timestamp), or a context_id of another product',
    ),
    '401': errorResponse('API key missing or invalid'),
    '413': errorResponse(
      `more than ${maxBatch} signals in one batch (details.max_batch_size), or a body larger than the configured limit`,
    ),
    '415': errorResponse('body not sent as application/json, or not in UTF-8'),
    '429': errorResponse(
      'the batch would cross the monthly signal limit of the plan; nothing stored. The message says what to do: ' +
        'split the batch into at most details.remaining signals, wait for details.resets_at, or upgrade to ' +
        'details.upgrade_to. Retry-After (seconds to the month reset) only when the plan can take the batch at all',
      RETRY_AFTER_HEADER,
    ),
  };

  return contractRouter()
    .route(
      {
        method: 'post',
        path: '/api/signals',
        operationId: 'sendSignals',
        summary: `Send one signal or an array of up to ${maxBatch} (all or nothing; messageId makes retries safe)`,
        tags: ['Signals'],
        security: KEY_SECURITY,
        // Parsed by the handler: 415, 413 and per-index 400s of its own, counted as refusals.
        request: {
          body: z.union([SignalInput, z.array(SignalInput).max(maxBatch)]),
          bodyParsedByHandler: true,
        },
        responses,
        before: [apiKeyAuth(deps.keys, { required: true })],
      },
      handler(signalInput),
    )
    .route(
      {
        method: 'post',
        path: '/api/ingest',
        operationId: 'ingest',
        summary:
          'Automation-friendly ingest: key in ?key= or x-api-key; type/event/event_type and payload/data/properties',
        tags: ['Signals'],
        security: [{ apiKeyQuery: [] }, ...KEY_SECURITY],
        request: {
          body: z.union([IngestSignalInput, z.array(IngestSignalInput).max(maxBatch)]),
          bodyParsedByHandler: true,
        },
        responses,
        before: [apiKeyAuth(deps.keys, { required: true, allowQuery: true })],
      },
      handler(ingestSignalInput),
    );
}

import { Router, type Request, type RequestHandler } from 'express';
import type { z } from 'zod';
import { AppError, isAppError } from '@repo/errors';
import type { KeyOwnerCache } from '../../data/key-cache';
import type { SignalRepository } from '../../data/signals';
import { acceptSignals, parseSignalBatch } from '../../domain/ingest';
import type { SignalFeedbackEvents } from '../../metrics';
import { IngestSignalInput, SignalInput } from '../../schemas';
import { apiKeyAuth, keyOwnerOf } from './auth-middleware';

/** A body was sent but not as JSON: 415 rather than a confusing "missing type". */
function requireJsonBody(req: Request): void {
  const hasBody =
    (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') ||
    req.headers['transfer-encoding'] !== undefined;
  if (req.body === undefined && hasBody && !req.is('application/json')) {
    throw new AppError('unsupported_media_type', 'Send signals as JSON with Content-Type: application/json');
  }
}

const REFUSAL_REASONS: Partial<Record<string, string>> = {
  quota_exceeded: 'quota',
  payload_too_large: 'too_large',
  invalid_request: 'invalid',
  invalid_json: 'invalid',
  unsupported_media_type: 'invalid',
};

/**
 * POST /api/signals and POST /api/ingest (README, "Endpoints"): one signal or an array of up to
 * `maxBatch`, authenticated by the product API key; 200 `{ received }`.
 */
export function signalsRouter(deps: {
  signals: SignalRepository;
  keys: KeyOwnerCache;
  maxBatch: number;
  now: () => Date;
  events?: SignalFeedbackEvents;
}): Router {
  const router = Router();

  const handler =
    (schema: z.ZodType<SignalInput, unknown>): RequestHandler =>
    async (req, res) => {
      const count = Array.isArray(req.body) ? req.body.length : 1;
      try {
        requireJsonBody(req);
        const batch = parseSignalBatch(req.body, schema, deps.maxBatch);
        const received = await acceptSignals(deps.signals, deps.keys, keyOwnerOf(res)!, batch, deps.now());
        deps.events?.signalsAccepted(received);
        res.json({ received });
      } catch (err) {
        const reason = isAppError(err) ? REFUSAL_REASONS[err.code] : undefined;
        if (reason) deps.events?.signalsRefused(reason, count);
        throw err;
      }
    };

  router.post('/signals', apiKeyAuth(deps.keys, { required: true }), handler(SignalInput));
  router.post(
    '/ingest',
    apiKeyAuth(deps.keys, { required: true, allowQuery: true }),
    handler(IngestSignalInput),
  );
  return router;
}

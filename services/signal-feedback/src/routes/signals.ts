import { Router, type Request } from 'express';
import { AppError } from '@repo/errors';
import type { KeyOwnerCache } from '../data/key-cache';
import type { SignalRepository } from '../data/signals';
import { acceptSignals, parseSignalBatch } from '../domain/ingest';
import { IngestSignalInput, SignalInput } from '../schemas';
import { apiKeyAuth, keyOwnerOf } from './auth-middleware';

/** A body was sent but not as JSON: 415 rather than a confusing "missing type". */
function requireJsonBody(req: Request): void {
  const hasBody = (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0') || req.headers['transfer-encoding'] !== undefined;
  if (req.body === undefined && hasBody && !req.is('application/json')) {
    throw new AppError('unsupported_media_type', 'Send signals as JSON with Content-Type: application/json');
  }
}

/**
 * POST /api/signals and POST /api/ingest (spec, "Endpoints"): one signal or an array of up to
 * `maxBatch`, authenticated by the product API key; 200 `{ received }`.
 */
export function signalsRouter(deps: { signals: SignalRepository; keys: KeyOwnerCache; maxBatch: number; now: () => Date }): Router {
  const router = Router();

  router.post('/signals', apiKeyAuth(deps.keys, { required: true }), async (req, res) => {
    requireJsonBody(req);
    const batch = parseSignalBatch(req.body, SignalInput, deps.maxBatch);
    const received = await acceptSignals(deps.signals, deps.keys, keyOwnerOf(res)!, batch, deps.now());
    res.json({ received });
  });

  router.post('/ingest', apiKeyAuth(deps.keys, { required: true, allowQuery: true }), async (req, res) => {
    requireJsonBody(req);
    const batch = parseSignalBatch(req.body, IngestSignalInput, deps.maxBatch);
    const received = await acceptSignals(deps.signals, deps.keys, keyOwnerOf(res)!, batch, deps.now());
    res.json({ received });
  });

  return router;
}

import { Router, type RequestHandler } from 'express';
import { AppError } from '@repo/errors';
import { validate, validated } from '@repo/service-kit';
import { z } from 'zod';
import type { ProposalRepository } from '../../data/proposals';
import type { KeyOwnerCache } from '../../data/key-cache';
import type { AnalysisService } from '../../domain/analysis';
import { changeProposalStatus } from '../../domain/proposal-status';
import { ProposalStatusChange, ProposalsQuery } from '../../schemas';
import { apiKeyAuth, keyOwnerOf, requireSession, sessionOf } from './auth-middleware';

const IdParams = z.object({ id: z.uuid() });

/**
 * GET /api/proposals (product API key or session), PATCH /api/proposals/{id} (status changes, same
 * auth; 409 for a change the state machine refuses) and POST /api/analysis/run (session: analyse the
 * user's contexts now).
 */
export function proposalsRouter(deps: {
  proposals: ProposalRepository;
  keys: KeyOwnerCache;
  analysis: AnalysisService;
}): Router {
  const router = Router();
  const optionalKey = apiKeyAuth(deps.keys, { required: false });
  const keyOrSession: RequestHandler = (req, res, next) => {
    const done = (err?: unknown) => {
      if (err) next(err);
      else if (!keyOwnerOf(res) && !sessionOf(res))
        next(new AppError('unauthorized', 'Send a product API key in x-api-key or sign in'));
      else next();
    };
    Promise.resolve(optionalKey(req, res, done)).catch(next);
  };

  router.get('/proposals', keyOrSession, validate({ query: ProposalsQuery }), async (_req, res) => {
    const { query } = validated<z.infer<typeof ProposalsQuery>>(res.locals);
    const owner = keyOwnerOf(res);
    if (owner && query.product_id && query.product_id !== owner.productId)
      throw new AppError('invalid_request', "product_id must be the key's product");
    const scope = owner
      ? { productId: owner.productId }
      : { userId: sessionOf(res)!.user.id, ...(query.product_id ? { productId: query.product_id } : {}) };
    res.json(await deps.proposals.list(scope, { status: query.status, limit: query.limit }));
  });

  router.patch(
    '/proposals/:id',
    keyOrSession,
    validate({ params: IdParams, body: ProposalStatusChange }),
    async (_req, res) => {
      const { params, body } = validated<
        unknown,
        z.infer<typeof IdParams>,
        z.infer<typeof ProposalStatusChange>
      >(res.locals);
      const owner = keyOwnerOf(res);
      const scope = owner ? { productId: owner.productId } : { userId: sessionOf(res)!.user.id };
      res.json(await changeProposalStatus(deps.proposals, params.id, scope, body.status));
    },
  );

  router.post('/analysis/run', requireSession, async (_req, res) => {
    const r = await deps.analysis.runOnce('user', sessionOf(res)!.user.id);
    res.json({
      contexts_analyzed: r.contextsAnalyzed,
      proposals_created: r.proposalsCreated,
      proposals: r.proposals,
    });
  });

  return router;
}

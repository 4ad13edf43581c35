import { AppError } from '@repo/errors';
import { contractRouter, errorResponse, type ContractRouter } from '@repo/service-kit';
import { z } from 'zod';
import type { ProposalRepository } from '../../data/proposals';
import type { AnalysisService } from '../../domain/analysis';
import { changeProposalStatus } from '../../domain/proposal-status';
import { AnalysisRunResult, Proposal, ProposalStatusChange, ProposalsQuery } from '../../schemas/proposals';
import { callerScope, keyOrSession, keyOwnerOf, requiredSession, requireSession } from './auth-middleware';
import { accessRoutes } from './access';
import type { ProductKeyCache } from '../../domain/product-key';

const IdParams = z.object({ id: z.uuid().meta({ description: 'the proposal' }) });

/**
 * GET /api/proposals (product API key or session), PATCH /api/proposals/{id} (status changes, same
 * auth; 409 for a change the state machine refuses) and POST /api/analysis/run (session: analyse the
 * user's contexts now) (README, "Endpoints" and "Routing, classification and analysis").
 */
export function proposalsRoutes(deps: {
  proposals: ProposalRepository;
  keys: ProductKeyCache;
  analysis: AnalysisService;
}): ContractRouter {
  const routes = contractRouter();
  accessRoutes(routes, 'keyOrSession', keyOrSession(deps.keys))
    .route(
      {
        method: 'get',
        path: '/api/proposals',
        operationId: 'listProposals',
        summary:
          "Proposals, highest priority first (API key: the key's product; session: all the user's products)",
        tags: ['Proposals'],
        request: { query: ProposalsQuery },
        responses: {
          '200': { description: 'the proposals', body: z.array(Proposal) },
          '400': errorResponse('invalid query'),
        },
      },
      async (_req, res) => {
        const { query } = res.locals.valid;
        const owner = keyOwnerOf(res);
        if (owner && query.product_id && query.product_id !== owner.productId)
          throw new AppError('invalid_request', "product_id must be the key's product");
        const scope = owner
          ? { productId: owner.productId }
          : {
              userId: requiredSession(res).user.id,
              ...(query.product_id ? { productId: query.product_id } : {}),
            };
        res.json(await deps.proposals.list(scope, { status: query.status, limit: query.limit }));
      },
    )
    .route(
      {
        method: 'patch',
        path: '/api/proposals/{id}',
        operationId: 'changeProposalStatus',
        summary:
          "Change a proposal's status: pending -> approved|rejected|deferred, deferred -> pending|approved|rejected",
        tags: ['Proposals'],
        request: { params: IdParams, body: ProposalStatusChange },
        responses: {
          '200': { description: 'the updated proposal', body: Proposal },
          '400': errorResponse('invalid status or id'),
          '404': errorResponse('no such proposal for this key or user'),
          '409': errorResponse('transition not allowed (details.from, details.allowed)'),
        },
      },
      async (_req, res) => {
        const { params, body } = res.locals.valid;
        res.json(await changeProposalStatus(deps.proposals, params.id, callerScope(res), body.status));
      },
    );
  return accessRoutes(routes, 'session', requireSession).route(
    {
      method: 'post',
      path: '/api/analysis/run',
      operationId: 'runAnalysis',
      summary: "Analyse the signed-in user's contexts now (the schedule does it periodically)",
      tags: ['Proposals'],
      responses: {
        '200': { description: 'what the pass did', body: AnalysisRunResult },
      },
    },
    async (_req, res) => {
      const r = await deps.analysis.runOnce('user', requiredSession(res).user.id);
      res.json({
        contexts_analyzed: r.contextsAnalyzed,
        proposals_created: r.proposalsCreated,
        proposals: r.proposals,
      });
    },
  );
}

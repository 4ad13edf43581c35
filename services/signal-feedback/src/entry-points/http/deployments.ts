import { notFound, validationError } from '@repo/errors';
import { contractRouter, errorResponse, RETRY_AFTER_HEADER, type ContractRouter } from '@repo/service-kit';
import { z } from 'zod';
import type { SignalRepository } from '../../data/signals';
import { deploymentInput, MAX_LISTED_DEPLOYMENTS, type DeploymentService } from '../../domain/deployments';
import { SeriesPoint, SeriesQuery } from '../../schemas/contexts';
import { CreateDeploymentBody, Deployment } from '../../schemas/deployments';
import { callerScope, keyOrSession } from './auth-middleware';
import { accessRoutes } from './access';
import { queryRange } from './time-range';
import type { ProductKeyCache } from '../../domain/product-key';

const ProposalIdParams = z.object({ id: z.uuid().meta({ description: 'an approved proposal' }) });
const ContextIdParams = z.object({ id: z.uuid().meta({ description: 'the context' }) });

const HOUR_MS = 3_600_000;
const BUCKET_MS = { hour: HOUR_MS, day: 24 * HOUR_MS } as const;
/**
 * The most buckets one series answer holds: about 83 days of hours, a year of days. Each answer
 * counts the context's signals over its whole range, so the range is what is bounded.
 */
export const MAX_SERIES_BUCKETS = { hour: 2_000, day: 366 } as const;

/**
 * The UTC bucket starts covering `[from, to)`: from the bucket holding `from` to the one holding the
 * last millisecond before `to`.
 */
export function bucketStarts(from: Date, to: Date, bucket: 'hour' | 'day'): number[] {
  const size = BUCKET_MS[bucket];
  const starts: number[] = [];
  for (let t = Math.floor(from.getTime() / size) * size; t < to.getTime(); t += size) starts.push(t);
  return starts;
}

/**
 * Deployments and series (README, "Deployments and verification" and "Endpoints"), with a product key
 * or a session: POST and GET /api/proposals/{id}/deployments, GET /api/context/{id}/series. Mounted
 * before the session-only /api/context routes, whose session check would otherwise refuse a key.
 */
export function deploymentsRoutes(deps: {
  deployments: DeploymentService;
  signals: SignalRepository;
  keys: ProductKeyCache;
  now: () => Date;
}): ContractRouter {
  return accessRoutes(contractRouter(), 'keyOrSession', keyOrSession(deps.keys))
    .route(
      {
        method: 'post',
        path: '/api/proposals/{id}/deployments',
        operationId: 'recordDeployment',
        summary:
          "Record that an approved proposal's change shipped; its verification compares the treated contexts with control contexts, before and after deployed_at",
        description:
          "Counts against the plan's monthly deployments (free 3, builder 10, growth and scale unlimited; 429 quota_exceeded beyond). " +
          "The verification compares the share of the proposal's failing signal types in the window after deployed_at " +
          '(window_minutes, default 24 h) with the same weekdays and hours one or more whole weeks earlier, in the treated ' +
          "contexts (`contexts`, default the proposal's) against the control contexts (`control_contexts`, default the product's " +
          'other contexts with enough signals): a difference-in-differences of the log odds with its interval, a placebo ' +
          'one period earlier, a traffic check, Holm across types, and the naive before/after figures beside them.',
        tags: ['Deployments'],
        request: { params: ProposalIdParams, body: CreateDeploymentBody },
        responses: {
          '201': { description: 'the deployment, with its (provisional) verification', body: Deployment },
          '400': errorResponse(
            "invalid body or id, deployed_at in the future, a context that is not the product's, or a context both treated and control",
          ),
          '404': errorResponse('no such proposal for this key or user'),
          '409': errorResponse('the proposal is not approved (`proposal_not_approved`; details.status)'),
          '429': errorResponse(
            "the plan's monthly deployments are used up (`quota_exceeded`; details.resets_at)",
            RETRY_AFTER_HEADER,
          ),
        },
      },
      async (_req, res) => {
        const { params, body } = res.locals.valid;
        const created = await deps.deployments.record(params.id, callerScope(res), deploymentInput(body));
        res.status(201).json(created);
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/proposals/{id}/deployments',
        operationId: 'listDeployments',
        summary: `A proposal's deployments, newest first (at most ${MAX_LISTED_DEPLOYMENTS}), each with its verification (provisional while the after-window is open)`,
        tags: ['Deployments'],
        request: { params: ProposalIdParams },
        responses: {
          '200': { description: 'the deployments', body: z.array(Deployment) },
          '400': errorResponse('invalid id'),
          '404': errorResponse('no such proposal for this key or user'),
        },
      },
      async (_req, res) => {
        const { params } = res.locals.valid;
        res.json(await deps.deployments.list(params.id, callerScope(res), MAX_LISTED_DEPLOYMENTS));
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/context/{id}/series',
        operationId: 'contextSeries',
        summary:
          "A context's signal volume and negative rate per UTC hour or day, empty buckets included (the dashboard's chart)",
        description: `At most ${MAX_SERIES_BUCKETS.hour} hour or ${MAX_SERIES_BUCKETS.day} day buckets per answer.`,
        tags: ['Contexts'],
        request: { params: ContextIdParams, query: SeriesQuery },
        responses: {
          '200': { description: 'the buckets, oldest first', body: z.array(SeriesPoint) },
          '400': errorResponse(
            `invalid id or range (from not before to, more than ${MAX_SERIES_BUCKETS.hour} hours or ${MAX_SERIES_BUCKETS.day} days)`,
          ),
          '404': errorResponse('no such context for this key or user'),
        },
      },
      async (_req, res) => {
        const { params, query } = res.locals.valid;
        const { from, to } = queryRange(query, deps.now());
        const size = BUCKET_MS[query.bucket];
        const buckets = Math.floor((to.getTime() - 1) / size) - Math.floor(from.getTime() / size) + 1;
        const most = MAX_SERIES_BUCKETS[query.bucket];
        if (buckets > most)
          throw validationError([
            {
              path: 'query.from',
              code: 'custom',
              message: `must be at most ${most} ${query.bucket} buckets before \`to\` (this range needs ${buckets})`,
            },
          ]);
        const counts = await deps.signals.series(params.id, callerScope(res), {
          from,
          to,
          bucket: query.bucket,
        });
        if (!counts) throw notFound('context');
        res.json(
          bucketStarts(from, to, query.bucket).map((start) => {
            const c = counts.get(start) ?? { signals: 0, negative: 0 };
            return {
              start: new Date(start).toISOString(),
              signals: c.signals,
              negative: c.negative,
              negative_rate: c.signals > 0 ? Math.round((c.negative / c.signals) * 10_000) / 10_000 : null,
            };
          }),
        );
      },
    );
}

import { notFound, validationError } from '@repo/errors';
import { contractRouter, errorResponse, type ContractRouter } from '@repo/service-kit';
import { z } from 'zod';
import { PLAN_LIMITS, PLANS } from '../../domain/plans';
import { PlanName } from '../../schemas/accounts';
import { requiredSession, requireSession } from './auth-middleware';
import { accessRoutes } from './access';
import { queryRange } from './time-range';
import { PAYLOAD_PREVIEW_CHARS, type DashboardRepository } from '../../data/dashboard';

const DAY_MS = 24 * 3_600_000;
/** The longest range a breakdown by type covers, in days (as long as a series of days). */
export const MAX_BREAKDOWN_DAYS = 366;
/** Most types in a breakdown answer. */
export const MAX_BREAKDOWN_TYPES = 20;
/** Most rows of the latest-signals answer. */
export const MAX_LATEST_SIGNALS = 100;

const Sentiment = z.enum(['positive', 'negative', 'neutral']);

const TypesQuery = z.strictObject({
  context_id: z.uuid().describe("one of the user's contexts"),
  from: z.iso.datetime({ offset: true }).optional().describe('inclusive; default: 7 days before to'),
  to: z.iso.datetime({ offset: true }).optional().describe('exclusive; default: now'),
});

const TypeCount = z.object({
  type: z.string(),
  sentiment: Sentiment.describe("how the context's lists class the type"),
  count: z.int().min(1),
});

const LatestQuery = z.strictObject({
  product_id: z.uuid().optional().describe("only this product's signals"),
  limit: z.coerce
    .number()
    .int()
    .min(1)
    .max(MAX_LATEST_SIGNALS)
    .default(20)
    .describe(`rows, 1 to ${MAX_LATEST_SIGNALS}`),
});

const RecentSignal = z.object({
  id: z.string().describe('row id (decimal)'),
  product_id: z.uuid(),
  context_id: z.uuid().nullable().describe('null: the signal reached no context and is never analysed'),
  type: z.string(),
  sentiment: Sentiment,
  payload_preview: z
    .string()
    .nullable()
    .describe(`the payload's JSON, first ${PAYLOAD_PREVIEW_CHARS} characters`),
  created_at: z.iso.datetime().describe("the signal's time: the client's timestamp when it sent one"),
  received_at: z.iso.datetime().describe('when the service stored it; rows come in this order'),
});

const AnalysisReadiness = z.object({
  min_signals: z
    .int()
    .describe('signals a context needs in the last 24 hours to be analysed (ANALYSIS_MIN_SIGNALS)'),
  window_hours: z.int().describe('the window those signals are counted in'),
  contexts: z.array(
    z.object({
      context_id: z.uuid(),
      product_id: z.uuid(),
      name: z.string(),
      signals_24h: z.int().min(0),
      due: z.boolean().describe('signals_24h >= min_signals: the next pass analyses it'),
      last_analyzed_at: z.iso.datetime().nullable(),
    }),
  ),
  unrouted: z
    .array(
      z.object({
        product_id: z.uuid(),
        name: z.string(),
        signals_24h: z.int().min(0),
        signals_7d: z.int().min(0),
      }),
    )
    .describe('per product, signals that reached no context: they are stored and counted, never analysed'),
});

const PlanRow = z.object({
  plan: PlanName,
  price_usd: z.number().describe('per month; billing is out of scope'),
  signals_per_month: z.int(),
  proposals_per_month: z.int().nullable().describe('null: unlimited'),
  deployments_per_month: z.int().nullable().describe('null: unlimited'),
  products: z.int().nullable().describe('null: unlimited'),
});

/**
 * The dashboard's read endpoints (README, "Dashboard"), session only: a context's breakdown by signal
 * type over a range (GET /api/dashboard/types), the latest signals (GET /api/dashboard/signals), what
 * the next analysis pass would do per context and the signals that reached no context
 * (GET /api/dashboard/analysis) and the plans with their limits (GET /api/dashboard/plans). Unknown
 * query parameters are refused (400), as is a range not in order or longer than
 * {@link MAX_BREAKDOWN_DAYS} days.
 * @param deps.minSignals `ANALYSIS_MIN_SIGNALS`
 */
export function dashboardRoutes(deps: {
  queries: DashboardRepository;
  minSignals: number;
  now: () => Date;
}): ContractRouter {
  const routes = contractRouter();
  routes.router.use('/api/dashboard', requireSession);
  return accessRoutes(routes, 'session', requireSession)
    .route(
      {
        method: 'get',
        path: '/api/dashboard/types',
        operationId: 'dashboardTypes',
        summary: "A context's signals by type and sentiment over a range, most frequent first",
        description: `At most ${MAX_BREAKDOWN_TYPES} types; the range is at most ${MAX_BREAKDOWN_DAYS} days.`,
        tags: ['Dashboard'],
        request: { query: TypesQuery },
        responses: {
          '200': { description: 'the counts', body: z.array(TypeCount) },
          '400': errorResponse('invalid query, or a range not in order or too long'),
          '404': errorResponse('no such context of the user'),
        },
      },
      async (_req, res) => {
        const { query } = res.locals.valid;
        const { from, to } = queryRange(query, deps.now());
        if (to.getTime() - from.getTime() > MAX_BREAKDOWN_DAYS * DAY_MS)
          throw validationError([
            {
              path: 'query.from',
              code: 'custom',
              message: `must be at most ${MAX_BREAKDOWN_DAYS} days before \`to\``,
            },
          ]);
        const counts = await deps.queries.typeCounts(
          requiredSession(res).user.id,
          query.context_id,
          { from, to },
          MAX_BREAKDOWN_TYPES,
        );
        if (!counts) throw notFound('context');
        res.json(counts);
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/dashboard/signals',
        operationId: 'dashboardLatestSignals',
        summary: "The user's latest signals, last received first (the dashboard's live table)",
        tags: ['Dashboard'],
        request: { query: LatestQuery },
        responses: {
          '200': { description: 'the signals', body: z.array(RecentSignal) },
          '400': errorResponse('invalid query'),
        },
      },
      async (_req, res) => {
        const { query } = res.locals.valid;
        res.json(
          await deps.queries.latestSignals(requiredSession(res).user.id, query.limit, query.product_id),
        );
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/dashboard/analysis',
        operationId: 'dashboardAnalysis',
        summary:
          'Per context, its signals of the last 24 hours against the analysis threshold; per product, the signals that reached no context',
        tags: ['Dashboard'],
        request: { query: z.strictObject({}) },
        responses: {
          '200': { description: 'the readiness', body: AnalysisReadiness },
          '400': errorResponse('a query parameter was sent'),
        },
      },
      async (_req, res) => {
        const userId = requiredSession(res).user.id;
        const now = deps.now();
        const [contexts, unrouted] = await Promise.all([
          deps.queries.contextReadiness(userId, now),
          deps.queries.unroutedSignals(userId, now),
        ]);
        res.json({
          min_signals: deps.minSignals,
          window_hours: 24,
          contexts: contexts.map((c) => ({ ...c, due: c.signals_24h >= deps.minSignals })),
          unrouted,
        });
      },
    )
    .route(
      {
        method: 'get',
        path: '/api/dashboard/plans',
        operationId: 'dashboardPlans',
        summary: 'The plans with their monthly limits, cheapest first',
        tags: ['Dashboard'],
        request: { query: z.strictObject({}) },
        responses: {
          '200': { description: 'the plans', body: z.array(PlanRow) },
          '400': errorResponse('a query parameter was sent'),
        },
      },
      (_req, res) => {
        res.json(
          PLANS.map((plan) => {
            const l = PLAN_LIMITS[plan];
            return {
              plan,
              price_usd: l.priceUsd,
              signals_per_month: l.signalsPerMonth,
              proposals_per_month: l.proposalsPerMonth,
              deployments_per_month: l.deploymentsPerMonth,
              products: l.products,
            };
          }),
        );
      },
    );
}

import { z } from 'zod';
import { addDuplicateIssues } from './unique';
import { AtomicAmount, X402Network } from './x402';

/**
 * Severity of a pain signal, `GapItem.pain_signals[].severity` (services/pipeline-runner/README.md,
 * "Scout pipeline").
 */
export const Severity = z.enum(['critical', 'high', 'medium', 'low']);
export type Severity = z.infer<typeof Severity>;

/**
 * A sector tag such as `fintech` or `dev-tools`: lowercase letters, digits and dashes, 1–64 chars.
 * Used as the `sector` query parameter of the Data API and as the key of stored reports.
 */
export const SectorTag = z
  .string()
  .trim()
  .toLowerCase()
  .regex(
    /^[a-z0-9][a-z0-9-]{0,63}$/,
    'must be a sector tag: lowercase letters, digits and dashes, at most 64',
  );

/** `GapItem.trend_signal`: the article behind a trend, its source, score and insight. */
export const TrendSignal = z.object({
  article: z.string(),
  source: z.string(),
  score: z.number(),
  insight: z.string(),
});
export type TrendSignal = z.infer<typeof TrendSignal>;

/** An element of `GapItem.pain_signals[]`. */
export const PainSignal = z.object({
  theme: z.string(),
  severity: Severity,
  signal_count: z.number().int().nonnegative(),
  description: z.string(),
});
export type PainSignal = z.infer<typeof PainSignal>;

/**
 * A market gap: a trend crossed with the pain signals it addresses (services/pipeline-runner/README.md,
 * "Scout pipeline").
 */
export const GapItem = z.object({
  title: z.string(),
  trend_signal: TrendSignal,
  pain_signals: z.array(PainSignal),
});
export type GapItem = z.infer<typeof GapItem>;

/**
 * A cluster of related pains; `mentions` is a count (services/pipeline-runner/README.md,
 * "Scout pipeline").
 */
export const PainCluster = z.object({
  theme: z.string(),
  description: z.string(),
  mentions: z.number().int().nonnegative(),
  intensity: z.string(),
});
export type PainCluster = z.infer<typeof PainCluster>;

/** A trend as the Data API serves it. */
export const TrendItem = z.object({
  title: z.string(),
  description: z.string(),
  velocity: z.string(),
  source: z.string(),
});
export type TrendItem = z.infer<typeof TrendItem>;

/** A keyword with its aggregate occurrence count. */
export const KeywordItem = z.object({
  keyword: z.string(),
  count: z.number().int().nonnegative(),
});
export type KeywordItem = z.infer<typeof KeywordItem>;

/**
 * The daily brief. The item shapes inside `stats`, `top_articles`, `sector_heatmap`, `narratives` and
 * `cross_signals` are left open here; they are passed through as JSON (objects/arrays) and documented
 * by the scan pipeline that produces them (services/market-intel/README.md, "Scout scans").
 */
export const DailyBrief = z.object({
  date: z.iso.date(),
  overview: z.string(),
  takeaway: z.string(),
  stats: z.record(z.string(), z.unknown()),
  top_articles: z.array(z.unknown()),
  sector_heatmap: z.record(z.string(), z.unknown()),
  narratives: z.array(z.unknown()),
  cross_signals: z.array(z.unknown()),
});
export type DailyBrief = z.infer<typeof DailyBrief>;

/** Date-time as sent on the wire: ISO 8601 with offset, e.g. `2026-11-21T06:00:00.000Z`. */
const DateTime = z.iso.datetime({ offset: true });

/**
 * The envelope of a scout list's 200 body, shared by GET /api/v1/scout/gaps, pain-clusters, trends and
 * keywords (services/market-intel/README.md, "Endpoints"): the items under `key`, their `count`, the
 * fields of `extra` (a list's own parameters as applied), the time of the newest report they come from
 * (`generatedFrom`, null when there is none) and the sector asked for (`sector`, null when every
 * sector is merged).
 */
function scoutListResponse<
  K extends string,
  T extends z.ZodType,
  E extends z.ZodRawShape = Record<never, never>,
>(key: K, item: T, extra?: E) {
  // A computed key is typed as a string index; the object has exactly the one property `key`.
  const items = { [key]: z.array(item) } as { [P in K]: z.ZodArray<T> };
  return z.object({
    ...items,
    count: z.number().int(),
    ...(extra as E),
    generatedFrom: DateTime.nullable(),
    sector: z.string().nullable(),
  });
}

/** 200 body of GET /api/v1/scout/gaps. */
export const GapsResponse = scoutListResponse('gaps', GapItem);
export type GapsResponse = z.infer<typeof GapsResponse>;

/** 200 body of GET /api/v1/scout/pain-clusters. */
export const PainClustersResponse = scoutListResponse('painClusters', PainCluster);
export type PainClustersResponse = z.infer<typeof PainClustersResponse>;

/**
 * 200 body of GET /api/v1/scout/trends. The envelope is this service's choice: it follows the gaps
 * one, plus the `days` window applied.
 */
export const TrendsResponse = scoutListResponse('trends', TrendItem, { days: z.number().int() });
export type TrendsResponse = z.infer<typeof TrendsResponse>;

/** 200 body of GET /api/v1/scout/keywords (envelope chosen like the gaps one). */
export const KeywordsResponse = scoutListResponse('keywords', KeywordItem);
export type KeywordsResponse = z.infer<typeof KeywordsResponse>;

/** 200 body of GET /api/v1/scout/brief. */
export const BriefResponse = z.object({
  brief: DailyBrief,
  generatedFrom: DateTime,
  sectors: z.array(z.string()),
});
export type BriefResponse = z.infer<typeof BriefResponse>;

/** One entry of the sector list of GET /api/v1/sectors (services/market-intel/README.md, "Endpoints"). */
export const SectorSummary = z.object({
  sector: z.string(),
  report_count: z.number().int(),
  latest_report: DateTime,
  gaps_count: z.number().int(),
});
export type SectorSummary = z.infer<typeof SectorSummary>;

/** 200 body of GET /api/v1/sectors. */
export const SectorList = z.object({
  sectors: z.array(SectorSummary),
  total_reports: z.number().int(),
  latest_overall: DateTime.nullable(),
});
export type SectorList = z.infer<typeof SectorList>;

/** Health of the LLM upstream (`llm` of the health body); `latency_ms` in milliseconds. */
export const LlmHealth = z.object({
  ok: z.boolean(),
  latency_ms: z.number().int().nonnegative(),
  error: z.string().nullable(),
});
export type LlmHealth = z.infer<typeof LlmHealth>;

/** Health of the search upstream. */
export const SearchHealth = z.object({ ok: z.boolean(), error: z.string().nullable() });
export type SearchHealth = z.infer<typeof SearchHealth>;

/** Why the service is unhealthy: `upstream` (retry later) or `config` (operator must fix). */
export const ErrorClass = z.enum(['upstream', 'config']);
export type ErrorClass = z.infer<typeof ErrorClass>;

/**
 * Body of GET /api/v1/health (services/market-intel/README.md, "Endpoints"): 200 when `ok`, else 503 with
 * `errorClass` and a `Retry-After` header (30 s for upstream, 600 s for config).
 */
export const HealthResponse = z.object({
  ok: z.boolean(),
  llm: LlmHealth,
  search: SearchHealth.nullable(),
  server_time: DateTime,
  errorClass: ErrorClass.optional(),
});
export type HealthResponse = z.infer<typeof HealthResponse>;

/** Job states; terminal: completed, failed (packages/compute/README.md, "Job state machine"). */
export const JobStatus = z.enum(['pending', 'running', 'completed', 'failed']);
export type JobStatus = z.infer<typeof JobStatus>;

/**
 * The refund of a failed paid job (services/market-intel/README.md, "Refunds"): the whole price, returned on chain from the
 * refund wallet into the token account the payment came from, once; or held as `unclaimable` when
 * that account no longer exists or is no longer the payer's token account of the mint (a refund
 * never creates an account).
 */
export const JobRefund = z.object({
  /**
   * `pending`: queued or being sent (retried until confirmed); `confirmed`: on chain, final;
   * `unclaimable`: held, final, nothing sent (see `reason`).
   */
  status: z.enum(['pending', 'confirmed', 'unclaimable']),
  /** Atomic USDC units returned (6 decimals): the price paid. */
  amount: AtomicAmount,
  network: X402Network,
  /** The wallet refunded: the payment's transfer authority. */
  to: z.string(),
  /** The refund transaction's signature, once confirmed. */
  transaction: z.string().nullable(),
  confirmedAt: DateTime.nullable(),
  /**
   * Why an `unclaimable` refund is held (`source_account_closed`, `source_account_changed`,
   * `source_account_frozen`, `payment_transfer_not_found`); null otherwise.
   */
  reason: z.string().nullable(),
});
export type JobRefund = z.infer<typeof JobRefund>;

/**
 * A compute job as returned by GET /api/v1/jobs/{jobId} (services/market-intel/README.md,
 * "Endpoints"), with the additional `refund` (null unless a failed job's payment is being or was
 * refunded; services/market-intel/README.md, "Refunds").
 */
export const AgentJob = z.object({
  jobId: z.string(),
  endpoint: z.string(),
  status: JobStatus,
  progressPct: z.number().int().min(0).max(100),
  result: z.record(z.string(), z.unknown()).nullable(),
  error: z.string().nullable(),
  createdAt: DateTime,
  completedAt: DateTime.nullable(),
  txHash: z.string(),
  refund: JobRefund.nullable(),
});
export type AgentJob = z.infer<typeof AgentJob>;

/** A trend as stored in a scan report: the served fields plus the item's date, used by `days`. */
export const ReportTrendItem = TrendItem.extend({ date: DateTime });
export type ReportTrendItem = z.infer<typeof ReportTrendItem>;

/** One sector's results inside a scan report. */
export const SectorScan = z.strictObject({
  sector: SectorTag,
  gaps: z.array(GapItem),
  painClusters: z.array(PainCluster),
  trends: z.array(ReportTrendItem),
  keywords: z.array(KeywordItem),
});
export type SectorScan = z.infer<typeof SectorScan>;

/**
 * A scan report as produced by a scout scan or imported from a JSON file: when it was generated, the
 * results per sector (each sector at most once) and, optionally, the daily brief across them.
 */
export const ScanReport = z
  .strictObject({
    generatedAt: DateTime,
    sectors: z.array(SectorScan).min(1),
    brief: DailyBrief.nullable().optional(),
  })
  .superRefine((report, ctx) => addDuplicateIssues(report.sectors, 'sector', 'sector', 'sectors', ctx));
export type ScanReport = z.infer<typeof ScanReport>;

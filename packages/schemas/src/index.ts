export {
  AtomicAmount,
  Base58,
  Error402,
  PaymentPayload,
  PaymentRequirements,
  PaymentResponse,
  X402Network,
} from './x402';
export {
  AgentJob,
  BriefResponse,
  DailyBrief,
  ErrorClass,
  GapItem,
  GapsResponse,
  HealthResponse,
  JobRefund,
  JobStatus,
  KeywordItem,
  KeywordsResponse,
  LlmHealth,
  PainCluster,
  PainClustersResponse,
  PainSignal,
  ReportTrendItem,
  ScanReport,
  SectorScan,
  SearchHealth,
  SectorList,
  SectorSummary,
  SectorTag,
  Severity,
  TrendItem,
  TrendSignal,
  TrendsResponse,
} from './market-intel';
export {
  Budget,
  FOUNDER_SIGNAL_MAX,
  Profile,
  RevenueThreshold,
  SESSION_CONFIG_DEFAULTS,
  SESSION_CONFIG_STRING_MAX,
  SessionConfigInput,
  SessionConfigObject,
  Timeline,
} from './session-config';
export type { SessionConfig } from './session-config';
export { buildOpenApiDocument, toJsonSchema } from './openapi';
export type {
  JsonSchema,
  OpenApiHeader,
  OpenApiInput,
  OpenApiOperation,
  OpenApiParameter,
  OpenApiResponse,
} from './openapi';
export { addDuplicateIssues } from './unique';

export { createLlmClient, classifyLlmError } from './client';
export type {
  CompletionRequest,
  CompletionResult,
  CompletionUsage,
  LlmClient,
  LlmClientOptions,
  LlmProbeResult,
} from './client';
export {
  LlmConfigError,
  LlmOutputError,
  LlmRequestError,
  LlmUnavailableError,
  SearchConfigError,
  SearchUnavailableError,
  UpstreamError,
  errorClassOf,
  isTransient,
  isUpstreamError,
} from './errors';
export type { UpstreamErrorClass } from './errors';
export { parseModelJson, describeIssues, schemaNameFor } from './json';
export type { ParsedJson } from './json';
export { createSearxngProvider } from './search/searxng';
export type { SearxngOptions } from './search/searxng';
export { createTavilyProvider } from './search/tavily';
export type { TavilyOptions } from './search/tavily';
export { DEFAULT_SEARCH_LIMIT, MAX_SEARCH_LIMIT, MAX_SNIPPET_CHARS } from './search/types';
export type { SearchOptions, SearchProbeResult, SearchProvider, SearchResult } from './search/types';
export { MAX_RESPONSE_BYTES } from './search/http';

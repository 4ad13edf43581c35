// The public shapes of the fuzzer: the document, credentials, generated requests, answers, operations and options.
import type fc from 'fast-check';
import type { SchemaArbitraryOptions } from './json-schema';

/** An OpenAPI 3.1 document as parsed JSON (only `paths`, `components` and `security` are read). */
export type OpenApiDocument = { readonly [key: string]: unknown };

/** Where a credential of a security scheme goes in a request. */
export interface CredentialSlot {
  /** The name of the scheme under `components.securitySchemes`. */
  scheme: string;
  in: 'header' | 'query' | 'cookie';
  /** Header, query parameter or cookie name. */
  name: string;
  /** Put before the value (`Bearer ` for `http` bearer schemes, else empty). */
  prefix: string;
}

/** How a fuzz request authenticates. */
export type FuzzAuth =
  /** With the credentials the test holds for these slots (values filled in by {@link sendFuzzRequest}). */
  | { mode: 'valid'; slots: readonly CredentialSlot[] }
  /** Without any credential. */
  | { mode: 'none' }
  /** With a garbage value in one scheme's slot. */
  | { mode: 'garbage'; slot: CredentialSlot; value: string };

/** One generated request, already encoded (a plain object: fast-check prints it for a counterexample). */
export interface FuzzRequest {
  operationId: string;
  /** Upper-case HTTP method. */
  method: string;
  /** The path with its parameters substituted and percent-encoded (some hostile ones raw). */
  path: string;
  /** The encoded query string without `?` (may be empty). */
  query: string;
  /** Request headers (credentials are added when sent). */
  headers: Readonly<Record<string, string>>;
  /** The body as sent, with its content type (none: no body, and no content-type header). */
  body?: { contentType?: string; data: string | Uint8Array };
  auth: FuzzAuth;
  /** What was made hostile; absent on a valid request. */
  mutation?: string;
  /**
   * Whether the path and query parameters and the body validate against the document (ajv; formats
   * not checked, string lengths in code points). Header parameters are not judged: such headers (a
   * CSRF token, say) often matter only together with a credential.
   */
  conforms: boolean;
}

/** What came back for a {@link FuzzRequest}. */
export interface FuzzResponse {
  status: number;
  headers: Headers;
  /** The raw body text. */
  text: string;
  /** The body parsed as JSON, or `undefined` when it is not JSON. */
  json: unknown;
}

/** One operation of the document with its request arbitraries and its judge. */
export interface FuzzOperation {
  operationId: string;
  /** Upper-case HTTP method. */
  method: string;
  /** The path template, e.g. `/api/v1/jobs/{jobId}`. */
  path: string;
  /** The response keys the document lists (`"200"`, `"4XX"`, `"default"`...). */
  documentedStatuses: readonly string[];
  /** Whether every security requirement of the operation needs a credential. */
  secured: boolean;
  /** Requests whose parameters and body are drawn from the schemas (credentials valid, absent or garbage). */
  valid: fc.Arbitrary<FuzzRequest>;
  /** Requests with exactly one hostile part (parameter, body, content type, header or query). */
  hostile: fc.Arbitrary<FuzzRequest>;
  /**
   * What is wrong with `response` to `request`, one sentence per problem (empty when nothing is):
   * a 5xx other than a 503 the operation documents; a status the operation does not document (exact,
   * `4XX`-style range or `default`) and that is neither global nor a known gap; a non-2xx answer
   * without a JSON content type, or whose body is not the error envelope ({@link envelopeProblems})
   * when the document gives the envelope or nothing for that status, or does not match the other
   * schema it gives (an x402 `Error402`, a health body); a 2xx body that does not match its documented
   * schema; a 2xx answer to a secured operation without valid credentials, or to a request that does
   * not conform to the document.
   * @param options statuses documented globally, and known gaps tolerated
   */
  problems(request: FuzzRequest, response: FuzzResponse, options?: JudgeOptions): string[];
}

/** Options of {@link fuzzOperations}. */
export interface FuzzOptions extends Omit<SchemaArbitraryOptions, 'root'> {
  /**
   * Names of the security schemes the test holds credentials for; their values are passed to
   * {@link sendFuzzRequest} (so a test can replace a session that a fuzzed log-out ended).
   */
  credentialSchemes?: readonly string[];
  /**
   * Garbage credentials per scheme name (default for every scheme: random printable ASCII strings,
   * empty and blank values, `null`, a bare `Bearer `, `%00` and an 8000-character value).
   */
  garbageCredentials?: Readonly<Record<string, fc.Arbitrary<string>>>;
}

/** A finding a suite tolerates while it is open elsewhere ({@link JudgeOptions.knownGaps}). */
export interface KnownGap {
  operationId: string;
  status: number;
  kind: 'undocumented-status' | 'body-schema';
  /** Why it is tolerated and where it is reported. */
  reason: string;
}

/** Options of {@link judgeResponse}. */
export interface JudgeOptions {
  /** Statuses the service documents for every operation at once (none of ours does today). */
  globalStatuses?: readonly number[];
  /**
   * Findings tolerated while they are open elsewhere (say where in `reason`): for `operationId` (`*`:
   * every operation) and `status`, either the status is missing from the document
   * (`undocumented-status`; the body must still be the error envelope) or the body does not match
   * the schema the document gives for it (`body-schema`).
   */
  knownGaps?: readonly KnownGap[];
}

/** Thrown by {@link fuzzOperations} for a document it cannot use (no `paths`, unsupported parameter). */
export class OpenApiFuzzError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'OpenApiFuzzError';
  }
}

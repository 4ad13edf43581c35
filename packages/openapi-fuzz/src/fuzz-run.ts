// Running the fuzzer: sending a request, the run settings from the environment, and the fast-check properties over operations.
import fc from 'fast-check';
import type { CredentialSlot, FuzzOperation, FuzzRequest, FuzzResponse, JudgeOptions } from './fuzz-types';
import { encode } from './request-wire';

/**
 * Sends a {@link FuzzRequest} with `fetch`: credentials of a `valid` request come from `credentials`
 * (by scheme name), a garbage credential goes in its slot, redirects are not followed.
 * @param baseUrl e.g. `http://127.0.0.1:3001`
 * @param credentials credential values by security scheme name
 * @param timeoutMs how long to wait for the whole answer, in milliseconds (default 15 000)
 * @param extraHeaders headers added to the request (e.g. `x-forwarded-for` to choose the client
 *   address a service behind a trusted proxy sees); the request's own headers win
 * @returns the status, headers, text and parsed JSON (`undefined` when not JSON)
 * @throws Error when a `valid` request names a scheme missing from `credentials`, or `Error('transport
 *   failure')` with the fetch error as `cause` when the request fails at the transport level (refused
 *   connection, reset, timeout, a header fetch refuses): a crash is a finding too
 */
export async function sendFuzzRequest(
  baseUrl: string,
  request: FuzzRequest,
  credentials: Readonly<Record<string, string>> = {},
  timeoutMs = 15_000,
  extraHeaders: Readonly<Record<string, string>> = {},
): Promise<FuzzResponse> {
  const headers: Record<string, string> = { ...extraHeaders, ...request.headers };
  const query = request.query ? [request.query] : [];
  const cookies: string[] = headers.cookie ? [headers.cookie] : [];
  const place = (slot: CredentialSlot, value: string) => {
    if (slot.in === 'header') headers[slot.name] = slot.prefix + value;
    else if (slot.in === 'query') query.push(`${encode(slot.name)}=${encode(value)}`);
    else cookies.push(`${slot.name}=${encode(value)}`);
  };
  if (request.auth.mode === 'valid') {
    for (const slot of request.auth.slots) {
      const value = credentials[slot.scheme];
      if (value === undefined) throw new Error(`no credential for security scheme "${slot.scheme}"`);
      place(slot, value);
    }
  } else if (request.auth.mode === 'garbage') place(request.auth.slot, request.auth.value);
  if (cookies.length > 0) headers.cookie = cookies.join('; ');
  if (request.body?.contentType !== undefined) headers['content-type'] = request.body.contentType;
  const url = `${baseUrl}${request.path}${query.length > 0 ? `?${query.join('&')}` : ''}`;
  const init: RequestInit = {
    method: request.method,
    headers,
    redirect: 'manual',
    signal: AbortSignal.timeout(timeoutMs),
  };
  if (request.body) {
    // Without a content type fetch would add text/plain for a string body: send bytes instead.
    init.body =
      typeof request.body.data === 'string' && request.body.contentType === undefined
        ? Buffer.from(request.body.data)
        : request.body.data;
  }
  let res: Response;
  let text: string;
  try {
    res = await fetch(url, init);
    text = await res.text();
  } catch (error) {
    // A refused, reset or closed connection is a finding too: say which.
    throw new Error('transport failure', { cause: error });
  }
  let json: unknown;
  try {
    json = text.length > 0 ? JSON.parse(text) : undefined;
  } catch {
    json = undefined;
  }
  return { status: res.status, headers: res.headers, text, json };
}

/** An error's message with its chain of causes (duck-typed: fetch's errors come from another realm under jest). */
function describeError(error: unknown): string {
  if (typeof error !== 'object' || error === null || !('message' in error)) return String(error);
  const { message, cause, code } = error as { message: unknown; cause?: unknown; code?: unknown };
  const text = `${String(message)}${typeof code === 'string' ? ` [${code}]` : ''}`;
  return cause === undefined ? text : `${text} (cause: ${describeError(cause)})`;
}

/** Options of {@link fuzzCheck}. */
export interface FuzzCheckOptions extends JudgeOptions {
  baseUrl: string;
  /** Credential values by security scheme name (read at each request: a test may replace them). */
  credentials?: Readonly<Record<string, string>>;
  /** Headers added to every request ({@link sendFuzzRequest}'s `extraHeaders`). */
  headers?: Readonly<Record<string, string>>;
  /** Runs per operation (default 40). */
  numRuns?: number;
  /** Seed, to replay a failure (fast-check prints it). */
  seed?: number;
  /** Replay path printed with the seed. */
  path?: string;
  /** Called with every answer (statistics, refreshing a session a fuzzed log-out ended...). */
  onResponse?: (request: FuzzRequest, response: FuzzResponse) => void | Promise<void>;
}

/**
 * The run settings a fuzz suite reads from its environment: `FUZZ_RUNS` (runs per operation, default
 * `defaultRuns`), and `FUZZ_SEED` / `FUZZ_PATH` to replay a failure fast-check printed.
 * @param defaultRuns runs per operation when `FUZZ_RUNS` is unset
 */
export function fuzzRunSettings(defaultRuns: number): Pick<FuzzCheckOptions, 'numRuns' | 'seed' | 'path'> {
  return {
    numRuns: Number(process.env.FUZZ_RUNS ?? defaultRuns),
    ...(process.env.FUZZ_SEED ? { seed: Number(process.env.FUZZ_SEED) } : {}),
    ...(process.env.FUZZ_PATH ? { path: process.env.FUZZ_PATH } : {}),
  };
}

/**
 * Runs one operation's valid or hostile arbitrary against a running service with fast-check and
 * judges every answer ({@link FuzzOperation.problems}).
 * @param operation from {@link fuzzOperations}
 * @param kind which arbitrary to run
 * @returns `undefined` when every answer passed, else fast-check's report (seed, path, shrunk
 *   counterexample and the problems, transport failures included), prefixed with the operation; it
 *   throws nothing of its own
 */
export async function fuzzCheck(
  operation: FuzzOperation,
  kind: 'valid' | 'hostile',
  options: FuzzCheckOptions,
): Promise<string | undefined> {
  const property = fc.asyncProperty(operation[kind], async (request) => {
    const response = await sendFuzzRequest(
      options.baseUrl,
      request,
      options.credentials,
      undefined,
      options.headers,
    );
    await options.onResponse?.(request, response);
    const problems = operation.problems(request, response, options);
    if (problems.length > 0) throw new Error(problems.join('\n'));
  });
  const details = await fc.check(property, {
    numRuns: options.numRuns ?? 40,
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    ...(options.path === undefined ? {} : { path: options.path }),
  });
  if (!details.failed) return undefined;
  // A transport failure (fetch failed) keeps its reason in `cause` (a reset or closed socket...).
  const error = describeError(details.errorInstance);
  return `${operation.method} ${operation.path} (${operation.operationId}, ${kind}): ${fc.defaultReportMessage(details)}\nProblems:\n${error}`;
}

/**
 * {@link fuzzCheck} for each operation in turn (sequentially, so the service sees one request at a time).
 * @returns the reports of the operations that failed (empty when all passed)
 */
export async function fuzzCheckAll(
  operations: readonly FuzzOperation[],
  kind: 'valid' | 'hostile',
  options: FuzzCheckOptions,
): Promise<string[]> {
  const failures: string[] = [];
  for (const operation of operations) {
    const report = await fuzzCheck(operation, kind, options);
    if (report !== undefined) failures.push(report);
  }
  return failures;
}

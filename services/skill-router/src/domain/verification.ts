import type { ProbeRecord } from '../data/health-checks';
import type { VerificationOutcome } from '../data/verification-queue';
import { VERIFICATION_STEPS, type VerificationStepResult } from '../schemas';

/** The answer of one outbound HTTP request to a skill endpoint. */
export type HttpOutcome =
  | { ok: true; status: number; latencyMs: number; contentType: string | null; body: string }
  | { ok: false; latencyMs: number; error: string; kind: 'timeout' | 'refused' | 'network' | 'too_large' };

/** The outbound HTTP the verification needs (implemented over undici with the SSRF guard). */
export interface SkillHttp {
  /** `GET url`: the health probe. */
  get(url: string): Promise<HttpOutcome>;
  /** `POST url` with a JSON body: the test call. */
  postJson(url: string, body: unknown): Promise<HttpOutcome>;
}

/** A check's verdict: passed, or the reason it did not. */
export type Verdict = { ok: true } | { ok: false; error: string };

/** A generated test input, or why none could be made. */
export type Generated = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * The checks that run registrants' schemas (implemented by the schema sandbox: worker threads with
 * memory limits and deadlines; README, "Security"). A check stopped at a limit answers
 * `{ ok: false, error }` naming the limit, like any other failed check.
 */
export interface SchemaChecks {
  /** `schema` is a JSON Schema (draft-07, 2019-09, 2020-12) within the size and depth limits that compiles. */
  checkSchema(schema: unknown): Promise<Verdict>;
  /** A test input generated from `inputSchema` and valid against it. */
  generateInput(inputSchema: unknown): Promise<Generated>;
  /** The reply `body` (text) is JSON valid against `outputSchema`. */
  checkReply(outputSchema: unknown, body: string): Promise<Verdict>;
}

/** A probe as stored in `health_checks`. */
export type Probe = ProbeRecord;

/**
 * Result of {@link verifySkill}: passed, the per-step results, the reason (`step: detail` of the first
 * failed step, `null` when every step passed) and the health probe and test call as probes.
 */
export type VerificationResult = VerificationOutcome;

/**
 * The health probe: `GET endpoint` answered with any status below 500 within the timeout counts as
 * reachable (many skill endpoints accept only POST, so 404/405 are fine; 5xx is not).
 */
export async function probeHealth(http: SkillHttp, endpoint: string): Promise<Probe & { detail: string }> {
  const res = await http.get(endpoint);
  if (!res.ok)
    return {
      ok: false,
      latencyMs: res.kind === 'timeout' ? null : res.latencyMs,
      statusCode: null,
      error: res.error,
      detail: res.error,
    };
  const ok = res.status < 500;
  const detail = ok
    ? `reachable: HTTP ${res.status} in ${res.latencyMs} ms`
    : `HTTP ${res.status} from GET ${endpoint}`;
  return { ok, latencyMs: res.latencyMs, statusCode: res.status, error: ok ? null : detail, detail };
}

/**
 * What a call of a skill with a generated input showed (the `test_call` step and the conformance
 * calls, README "Pinned definitions"):
 * - `conforms`: 2xx JSON valid against `output_schema`;
 * - `nonconforming`: the skill answered, but not so (another status, not JSON, invalid, too large, or a
 *   reply whose check reached a sandbox limit);
 * - `inconclusive`: nothing to judge the answer by: no test input could be made (our sandbox), no
 *   answer came (timeout, network, SSRF refusal: the health checks judge reachability), or the skill
 *   asked to be called later (429, 503).
 */
export type CallVerdict = 'conforms' | 'nonconforming' | 'inconclusive';

/** Result of {@link callWithGeneratedInput}: the verdict, a one-line detail and the probe when a request was sent. */
export interface CallCheck {
  verdict: CallVerdict;
  detail: string;
  probe?: Probe;
}

/**
 * The probe of a request that got no answer: no status, the error, and the time spent unless it
 * timed out (a timeout says nothing of the endpoint's latency).
 */
export function unansweredProbe(res: { kind: string; latencyMs: number; error: string }): Probe {
  return {
    ok: false,
    latencyMs: res.kind === 'timeout' ? null : res.latencyMs,
    statusCode: null,
    error: res.error,
  };
}

/**
 * POSTs an input generated from `inputSchema` to the endpoint and checks the answer against
 * `outputSchema`; every computation on the schemas and the reply runs in `schemas` (the sandbox).
 * @throws only what `schemas` throws when it is shut down
 */
export async function callWithGeneratedInput(
  http: SkillHttp,
  schemas: SchemaChecks,
  skill: { endpoint: string; inputSchema: unknown; outputSchema: unknown },
): Promise<CallCheck> {
  const input = await schemas.generateInput(skill.inputSchema);
  if (!input.ok) return { verdict: 'inconclusive', detail: input.error };
  const res = await http.postJson(skill.endpoint, input.value);
  if (!res.ok) {
    return {
      verdict: res.kind === 'too_large' ? 'nonconforming' : 'inconclusive',
      detail: res.error,
      probe: unansweredProbe(res),
    };
  }
  const fail = (verdict: CallVerdict, detail: string): CallCheck => ({
    verdict,
    detail,
    probe: { ok: false, latencyMs: res.latencyMs, statusCode: res.status, error: detail },
  });
  if (res.status < 200 || res.status > 299)
    return fail(
      res.status === 429 || res.status === 503 ? 'inconclusive' : 'nonconforming',
      `HTTP ${res.status} from POST ${skill.endpoint}`,
    );
  const reply = await schemas.checkReply(skill.outputSchema, res.body);
  if (!reply.ok) return fail('nonconforming', reply.error);
  return {
    verdict: 'conforms',
    detail: `HTTP ${res.status} in ${res.latencyMs} ms, response valid against output_schema`,
    probe: { ok: true, latencyMs: res.latencyMs, statusCode: res.status, error: null },
  };
}

/** The failed `endpoint_health_check` of an endpoint the SSRF policy refused (no request is sent). */
export function refusedHealthCheck(refusal: string): VerificationStepResult {
  return {
    step: 'endpoint_health_check',
    status: 'failed',
    detail: `endpoint refused: ${refusal}`,
    duration_ms: 0,
  };
}

/**
 * Verifies a registered skill (README, "Registration and verification"):
 * 1. `endpoint_health_check`: {@link probeHealth};
 * 2. `schema_validation`: input_schema and output_schema are valid JSON Schema (ajv);
 * 3. `test_call`: POST an input generated from input_schema; the answer must be 2xx JSON valid against
 *    output_schema. Skipped when a step before it failed.
 * Every computation on the schemas and the reply goes through `schemas` (the sandbox).
 * @param refusal when set, the endpoint was refused by the SSRF policy: step 1 fails with it and no
 *   request is sent
 * @throws only what `schemas` throws when it is shut down (the verification is then retried later)
 */
export async function verifySkill(
  http: SkillHttp,
  schemas: SchemaChecks,
  skill: { endpoint: string; inputSchema: unknown; outputSchema: unknown },
  refusal?: string,
): Promise<VerificationResult> {
  const steps: VerificationStepResult[] = [];
  const probes: Probe[] = [];
  const timed = async <T>(fn: () => Promise<T> | T): Promise<[T, number]> => {
    const t0 = performance.now();
    const v = await fn();
    return [v, Math.round(performance.now() - t0)];
  };

  // 1. endpoint_health_check
  if (refusal) {
    steps.push(refusedHealthCheck(refusal));
  } else {
    const [probe, duration] = await timed(() => probeHealth(http, skill.endpoint));
    const { detail, ...stored } = probe;
    probes.push(stored);
    steps.push({
      step: 'endpoint_health_check',
      status: probe.ok ? 'passed' : 'failed',
      detail,
      duration_ms: duration,
    });
  }

  // 2. schema_validation
  const [[inputCheck, outputCheck], schemaMs] = await timed(() =>
    Promise.all([schemas.checkSchema(skill.inputSchema), schemas.checkSchema(skill.outputSchema)]),
  );
  const schemaProblems = [
    ...(inputCheck.ok ? [] : [`input_schema ${inputCheck.error}`]),
    ...(outputCheck.ok ? [] : [`output_schema ${outputCheck.error}`]),
  ];
  steps.push({
    step: 'schema_validation',
    status: schemaProblems.length === 0 ? 'passed' : 'failed',
    detail:
      schemaProblems.length === 0
        ? 'input_schema and output_schema are valid JSON Schema'
        : schemaProblems.join('; '),
    duration_ms: schemaMs,
  });

  // 3. test_call
  const failedBefore = steps.find((s) => s.status === 'failed');
  if (failedBefore || schemaProblems.length > 0) {
    steps.push({
      step: 'test_call',
      status: 'skipped',
      detail: `skipped: ${failedBefore?.step ?? 'schema_validation'} failed`,
      duration_ms: 0,
    });
  } else {
    // Verification is strict: anything but a conforming answer fails the step.
    const [outcome, duration] = await timed(() => callWithGeneratedInput(http, schemas, skill));
    if (outcome.probe) probes.push(outcome.probe);
    steps.push({
      step: 'test_call',
      status: outcome.verdict === 'conforms' ? 'passed' : 'failed',
      detail: outcome.detail,
      duration_ms: duration,
    });
  }

  const firstFailure = steps.find((s) => s.status === 'failed');
  return {
    passed: !firstFailure && steps.length === VERIFICATION_STEPS.length,
    steps,
    reason: firstFailure ? `${firstFailure.step}: ${firstFailure.detail}` : null,
    probes,
  };
}

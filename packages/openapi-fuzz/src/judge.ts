// Judging an answer: the documented statuses, the error envelope and the documented body schemas.
import type { ValidateFunction } from 'ajv';
import type { FuzzRequest, FuzzResponse, JudgeOptions, KnownGap } from './fuzz-types';
import { isObject } from './json-schema';
import type { Compiled } from './openapi-document';

/** The error envelope's `code` is a snake_case string. */
const SNAKE_CASE = /^[a-z][a-z0-9_]*$/;

/**
 * What keeps `body` from being the one error envelope of the services (docs/architecture.md,
 * "Runtime"), `{ error: string, code: snake_case string, details?: any, requestId: non-empty string }`.
 * @param body a parsed JSON body
 * @returns one sentence per problem; empty for an envelope
 */
export function envelopeProblems(body: unknown): string[] {
  if (!isObject(body)) return ['the body is not a JSON object'];
  const problems: string[] = [];
  if (typeof body.error !== 'string') problems.push('`error` is not a string');
  if (typeof body.code !== 'string' || !SNAKE_CASE.test(body.code))
    problems.push('`code` is not a snake_case string');
  if (typeof body.requestId !== 'string' || body.requestId.length === 0)
    problems.push('`requestId` is not a non-empty string');
  return problems;
}

/** {@link FuzzOperation.problems} of one operation. */
export function judgeResponse(
  compiled: Compiled,
  secured: boolean,
  operationId: string,
  request: FuzzRequest,
  response: FuzzResponse,
  options: JudgeOptions = {},
): string[] {
  const problems: string[] = [];
  const status = response.status;
  const key = String(status);
  const range = `${key[0] ?? ''}XX`;
  const documentedKey = compiled.responses.has(key)
    ? key
    : compiled.responses.has(range)
      ? range
      : compiled.responses.has('default')
        ? 'default'
        : undefined;
  const gap = (kind: KnownGap['kind']) =>
    options.knownGaps?.some(
      (g) =>
        g.kind === kind && g.status === status && (g.operationId === operationId || g.operationId === '*'),
    ) ?? false;
  const documented =
    documentedKey !== undefined ||
    (options.globalStatuses ?? []).includes(status) ||
    gap('undocumented-status');
  if (status >= 500 && !(status === 503 && documentedKey !== undefined))
    problems.push(
      `answered ${status}${documentedKey ? '' : ' (undocumented)'}: ${response.text.slice(0, 300)}`,
    );
  else if (!documented)
    problems.push(`status ${status} is not in the document: ${response.text.slice(0, 300)}`);
  const ok = status >= 200 && status < 300;
  if (!ok) {
    const contentType = response.headers.get('content-type') ?? '';
    if (!/^application\/json\b/i.test(contentType))
      problems.push(`non-2xx answer with content-type ${JSON.stringify(contentType)}`);
    const schema = documentedKey === undefined ? undefined : compiled.responses.get(documentedKey);
    const other =
      schema?.validate && schema.schemaName !== undefined && schema.schemaName !== 'ErrorEnvelope';
    if (other && schema.validate) {
      if (!schema.validate(response.json) && !gap('body-schema'))
        problems.push(
          `body does not match ${schema.schemaName}: ${ajvSummary(schema.validate)}; body ${response.text.slice(0, 300)}`,
        );
    } else {
      const envelope = envelopeProblems(response.json);
      if (envelope.length > 0)
        problems.push(`not the error envelope (${envelope.join(', ')}): ${response.text.slice(0, 300)}`);
      else if (schema?.validate && !schema.validate(response.json) && !gap('body-schema'))
        problems.push(
          `body does not match the documented schema: ${ajvSummary(schema.validate)}; body ${response.text.slice(0, 300)}`,
        );
    }
  } else {
    const schema = documentedKey === undefined ? undefined : compiled.responses.get(documentedKey);
    if (schema?.validate && !schema.validate(response.json) && !gap('body-schema'))
      problems.push(
        `${status} body does not match the document: ${ajvSummary(schema.validate)}; body ${response.text.slice(0, 300)}`,
      );
    if (secured && request.auth.mode !== 'valid')
      problems.push(`answered ${status} to a request with ${request.auth.mode} credentials`);
    if (!request.conforms)
      problems.push(`answered ${status} to a request that does not conform to the document`);
  }
  return problems;
}

function ajvSummary(validate: ValidateFunction): string {
  return (validate.errors ?? [])
    .slice(0, 3)
    .map((e) => `${e.instancePath || '(root)'} ${e.message ?? ''}`)
    .join('; ');
}

import type { OpenApiOperation } from '@repo/schemas';
import captured from './examples.json';

/**
 * Real answers of market-intel, by `"<operationId> <status>"` and `"<operationId> request"`
 * (`examples.json`, captured from the running service by `test/openapi-examples.test.ts` with
 * `UPDATE_OPENAPI_EXAMPLES=1`; arrays cut to two items). The contract test checks each against its
 * schema.
 */
export const EXAMPLES: Readonly<Record<string, unknown>> = captured;

/**
 * The operations with the captured examples as their request and response examples (an example the
 * route declared itself wins).
 * @param operations the operations of the routers, as they declared them
 */
export function withExamples(operations: readonly OpenApiOperation[]): OpenApiOperation[] {
  return operations.map((op) => {
    const responses = Object.fromEntries(
      Object.entries(op.responses).map(([status, response]) => {
        const example = EXAMPLES[`${op.operationId} ${status}`];
        return [
          status,
          response.example === undefined && example !== undefined ? { ...response, example } : response,
        ];
      }),
    );
    const requestExample = EXAMPLES[`${op.operationId} request`];
    return {
      ...op,
      responses,
      ...(op.requestBody && op.requestBody.example === undefined && requestExample !== undefined
        ? { requestBody: { ...op.requestBody, example: requestExample } }
        : {}),
    };
  });
}

import captured from './examples.json';

/**
 * Real answers of signal-feedback, by `"<operationId> <status>"` and `"<operationId> request"`
 * (`examples.json`, captured from the running service by `test/openapi-examples.test.ts` with
 * `UPDATE_OPENAPI_EXAMPLES=1`; arrays cut to two items), for `withExamples`. The contract test checks
 * each against its schema.
 */
export const EXAMPLES: Readonly<Record<string, unknown>> = captured;

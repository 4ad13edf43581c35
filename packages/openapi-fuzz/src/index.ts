export { hostileJsonArbitrary } from './hostile-json';
export type { HostileJson } from './hostile-json';
export { hostileStringArbitrary } from './hostile-values';
export { validValueArbitrary } from './json-schema-arbitrary';
export { UnsupportedSchemaError } from './json-schema';
export type { JsonSchema, SchemaArbitraryOptions } from './json-schema';
export { envelopeProblems } from './judge';
export { fuzzCheck, fuzzCheckAll, fuzzRunSettings, sendFuzzRequest } from './fuzz-run';
export type { FuzzCheckOptions } from './fuzz-run';
export { fuzzOperations } from './openapi-fuzz';
export { OpenApiFuzzError } from './fuzz-types';
export type {
  CredentialSlot,
  FuzzAuth,
  FuzzOperation,
  FuzzOptions,
  FuzzRequest,
  FuzzResponse,
  JudgeOptions,
  KnownGap,
  OpenApiDocument,
} from './fuzz-types';
export { errorDialectProblems } from './error-dialect';
export type { DialectGap, DialectOptions, DialectRule } from './error-dialect';

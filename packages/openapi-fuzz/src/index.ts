export {
  hostileJsonArbitrary,
  hostileStringArbitrary,
  UnsupportedSchemaError,
  validValueArbitrary,
} from './json-schema-arbitrary';
export type { HostileJson, JsonSchema, SchemaArbitraryOptions } from './json-schema-arbitrary';
export {
  envelopeProblems,
  fuzzCheck,
  fuzzCheckAll,
  fuzzOperations,
  fuzzRunSettings,
  OpenApiFuzzError,
  sendFuzzRequest,
} from './openapi-fuzz';
export type {
  CredentialSlot,
  FuzzAuth,
  FuzzCheckOptions,
  FuzzOperation,
  FuzzOptions,
  FuzzRequest,
  FuzzResponse,
  JudgeOptions,
  KnownGap,
  OpenApiDocument,
} from './openapi-fuzz';

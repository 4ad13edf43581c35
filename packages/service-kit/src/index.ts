export { BaseHttpEnv, ConfigError, boolVar, intVar, parseConfig } from './config';
export { REDACT_PATHS, createLogger, httpLogger } from './logger';
export type { Logger } from './logger';
export { validate, validated } from './validate';
export type { RequestSchemas, Validated, ValidateOptions } from './validate';
export { createBaseApp } from './app';
export type { BaseAppOptions } from './app';
export { closeServer, onShutdown } from './shutdown';
export type { ShutdownStep } from './shutdown';

export { defineErrorCodes, ERROR_CODES, statusForCode } from './codes';
export type { ErrorCode, ServiceErrorCode } from './codes';
export { AppError, isAppError, notFound } from './app-error';
export type { AppErrorOptions } from './app-error';
export {
  describeIssues,
  ErrorEnvelope,
  errorEnvelope,
  fieldErrors,
  ERROR_CODE_LIST,
  validationError,
} from './envelope';
export type { FieldError, ValidationIssue } from './envelope';
export {
  errorHandler,
  isDependencyUnavailable,
  notFoundHandler,
  requestIdOf,
  sendAppError,
  toAppError,
} from './middleware';
export type { ErrorLogger } from './middleware';

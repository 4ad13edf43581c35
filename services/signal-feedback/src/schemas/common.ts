import { z } from 'zod';

/** NUL or an unpaired UTF-16 surrogate: text PostgreSQL cannot store. */
// eslint-disable-next-line no-control-regex -- matching NUL is the point
const UNSTORABLE_TEXT = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** A string PostgreSQL can store (no NUL, no unpaired surrogate). */
export const StorableString = z
  .string()
  .refine((v) => !UNSTORABLE_TEXT.test(v), 'must not contain NUL or unpaired surrogates');

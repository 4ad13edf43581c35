// Hostile values on their own: strings, wrong-typed values, oversized strings, out-of-range numbers, nesting and malformed JSON texts.
import fc from 'fast-check';
import { num, typesOf, type Keywords } from './json-schema';

/** Strings that have broken parsers, databases, loggers and templates before. */
const HOSTILE_STRINGS: readonly string[] = [
  '',
  ' ',
  '\u0000',
  'a\u0000b',
  '\uD800',
  'x\uDFFFy',
  '\uFEFFbom',
  '\u202Eright-to-left',
  '\u2028\u2029',
  '\r\n\r\nInjected: header',
  '\t\v\f\b',
  '\\',
  '"',
  "'",
  '`',
  'e\u0301\u0301\u0301\u0301\u0301\u0301',
  '👩‍👩‍👧‍👦🏳️‍🌈',
  '﷽',
  'İıßẞǅ',
  'ＡＢＣ',
  "'; DROP TABLE users; --",
  "' OR '1'='1",
  '%s%s%s%n',
  '%00%0d%0a',
  '{{7*7}}${7*7}<%= 7*7 %>',
  '${jndi:ldap://127.0.0.1/a}',
  '<script>alert(1)</script>',
  '../../../../etc/passwd',
  '..\\..\\windows\\win.ini',
  '__proto__',
  'constructor',
  'prototype',
  'hasOwnProperty',
  'toString',
  'null',
  'undefined',
  'NaN',
  'Infinity',
  'true',
  '-1',
  '0',
  '1e309',
  '0x1F',
  '９',
  '٣',
  '9'.repeat(400),
  'a'.repeat(5000),
  '🐱'.repeat(3000),
];

/**
 * Hostile strings: control characters (NUL), lone surrogates, byte-order marks, bidi overrides,
 * combining marks, astral emoji, SQL/template/path-traversal payloads, prototype keys, number-like
 * and very long values (up to 5000 code points), plus random strings of any code point.
 */
export function hostileStringArbitrary(): fc.Arbitrary<string> {
  return fc.oneof(
    { weight: 3, arbitrary: fc.constantFrom(...HOSTILE_STRINGS) },
    { weight: 1, arbitrary: fc.string({ unit: 'binary', maxLength: 64 }) },
    { weight: 1, arbitrary: fc.string({ unit: 'grapheme', maxLength: 64 }) },
  );
}

/** Deeply nested arrays or objects, `depth` levels, as JSON text. */
export function nested(depth: number, kind: 'array' | 'object'): string {
  return kind === 'array'
    ? '['.repeat(depth) + ']'.repeat(depth)
    : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
}

/** Values of every JSON type, to put where another type is expected. */
export function anyTypeArbitrary(): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.constantFrom<unknown>(
      null,
      true,
      false,
      0,
      -1,
      1.5,
      '',
      'text',
      [],
      {},
      [null],
      { a: 1 },
      '1',
      'true',
    ),
    fc.jsonValue({ maxDepth: 2 }),
  );
}

/** Oversized strings: one code point past `maxLength`, 20 000 code points, and 1.2 MB (beyond any body limit). */
export function oversized(schema: Keywords | undefined): fc.Arbitrary<string> {
  const max = num(schema?.maxLength);
  const lengths = [...(max !== undefined && max < 200_000 ? [max + 1, max + 1] : []), 20_000];
  return fc.oneof(
    {
      weight: 4,
      arbitrary: fc
        .constantFrom(...lengths)
        .chain((n) => fc.constantFrom('x', 'é', '🐱').map((c) => c.repeat(n))),
    },
    { weight: 1, arbitrary: fc.constant('x'.repeat(1_200_000)) },
  );
}

/** Numbers just outside the schema's bounds, non-integers for integers, and extremes. */
export function outOfRange(schema: Keywords | undefined): fc.Arbitrary<string> {
  const candidates = ['1e308', '-1e308', '1e999', '-0', '9007199254740993', '-9007199254740993', '1e-320'];
  const min = num(schema?.minimum) ?? num(schema?.exclusiveMinimum);
  const max = num(schema?.maximum) ?? num(schema?.exclusiveMaximum);
  if (min !== undefined) candidates.push(String(min - 1), String(min - 0.5), String(min));
  if (max !== undefined) candidates.push(String(max + 1), String(max + 0.5), String(max));
  if (schema && typesOf(schema).includes('integer')) candidates.push('0.5', '1.0000001', '2.5e1');
  return fc.constantFrom(...candidates);
}

/** Broken JSON texts derived from a valid one. */
export function malformed(text: string): fc.Arbitrary<string> {
  return fc.oneof(
    fc.integer({ min: 0, max: Math.max(0, text.length - 1) }).map((end) => text.slice(0, end)),
    fc.constantFrom(
      text + '}',
      text + ',',
      text.replace(/"/g, "'"),
      '\uFEFF' + text,
      `{"a":1,}`,
      `{"a" 1}`,
      `{a:1}`,
      'NaN',
      'undefined',
      '{"a":01}',
      '{"a":"\\x41"}',
      '{"a":"\\u12"}',
      '['.repeat(3),
      '"unterminated',
      '/* comment */ {}',
      '',
    ),
    fc.string({ unit: 'binary', maxLength: 64 }),
  );
}

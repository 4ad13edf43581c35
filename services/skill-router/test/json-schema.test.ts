import {
  checkJsonSchema,
  checkReply,
  generateInput,
  generatorPatternProblem,
  patternGeneratedLength,
} from '../src/domain/json-schema';
import { schemaLimitProblem, SCHEMA_MAX_BYTES } from '../src/domain/schema-limits';

describe('checkJsonSchema', () => {
  it('When two different schemas share an $id, then both compile and each validates by its own rules', () => {
    const a = checkJsonSchema({ $id: 'https://example.com/s.json', type: 'string' });
    const b = checkJsonSchema({ $id: 'https://example.com/s.json', type: 'number' });
    expect(a.ok && b.ok).toBe(true);
    if (a.ok && b.ok) {
      expect(a.validate('x')).toBe(true);
      expect(b.validate('x')).toBe(false);
      expect(b.validate(1)).toBe(true);
    }
  });

  it.each([
    ['a wrong type name', { type: 'strin' }, /not a valid JSON Schema/],
    ['a negative minLength', { type: 'string', minLength: -1 }, /not a valid JSON Schema/],
    ['an array', [] as unknown, /must be a JSON object/],
    ['a remote $ref', { $ref: 'https://example.com/other.json' }, /cannot be compiled/],
    ['an unknown draft', { $schema: 'https://example.com/draft', type: 'object' }, /unsupported \$schema/],
  ])('When the schema has %s, then it is refused with a reason', (_what, schema, message) => {
    const r = checkJsonSchema(schema);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.error).toMatch(message);
  });

  it('When vendor keywords are present, then the schema is still accepted', () => {
    expect(checkJsonSchema({ type: 'object', 'x-example': 1, examples: [{}] }).ok).toBe(true);
  });

  it.each([
    ['a lookahead', '(?=a)b', /cannot be compiled: .*unsupported Perl syntax/],
    ['a backreference', '(a)\\1', /cannot be compiled: .*invalid escape sequence/],
    [
      'nested repeat counts of 20000 x 20000',
      '(a{20000}){20000}',
      /cannot be compiled: .*invalid repeat count/,
    ],
  ])(
    'When a pattern has %s (not RE2), then the schema is refused as not compilable',
    (_what, pattern, message) => {
      const r = checkJsonSchema({ type: 'string', pattern });
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.error).toMatch(message);
    },
  );

  it('When two schemas use different patterns, then each validator keeps its own pattern (no shared cache entry)', () => {
    const digits = checkJsonSchema({ type: 'string', pattern: '^[0-9]+$' });
    const letters = checkJsonSchema({ type: 'string', pattern: '^[a-z]+$' });
    if (!digits.ok || !letters.ok) throw new Error('schemas refused');
    expect([digits.validate('123'), digits.validate('abc')]).toEqual([true, false]);
    expect([letters.validate('abc'), letters.validate('123')]).toEqual([true, false]);
  });

  it('When a pattern backtracks catastrophically in JavaScript, then validation still answers, in linear time', () => {
    const r = checkJsonSchema({ type: 'string', pattern: '^(a+)+$' });
    if (!r.ok) throw new Error(r.error);
    // The JavaScript engine needs longer than the age of the universe for 100 characters.
    expect(r.validate(`${'a'.repeat(100)}!`)).toBe(false);
    expect(r.validate('a'.repeat(100))).toBe(true);
  });

  it('When a schema is over the size or depth limit, then it is refused before ajv sees it', () => {
    const big = checkJsonSchema({ type: 'string', description: 'x'.repeat(SCHEMA_MAX_BYTES) });
    expect(big).toEqual({ ok: false, error: expect.stringMatching(/^is larger than 32768 bytes/) });
    let deep: Record<string, unknown> = { type: 'string' };
    for (let i = 0; i < 40; i++) deep = { type: 'object', properties: { a: deep } };
    expect(checkJsonSchema(deep)).toEqual({ ok: false, error: 'nests deeper than 32 levels' });
  });
});

describe('schemaLimitProblem', () => {
  it('When a value nests 100,000 levels deep, then it is refused without overflowing the stack', () => {
    const deep = JSON.parse(`${'['.repeat(100_000)}${']'.repeat(100_000)}`) as unknown;
    expect(schemaLimitProblem({ a: deep })).toBe('nests deeper than 32 levels');
  });

  it('When a schema is at the limits, then it passes', () => {
    let nested: Record<string, unknown> = {};
    for (let i = 1; i < 32; i++) nested = { a: nested };
    expect(schemaLimitProblem(nested)).toBeUndefined();
    expect(schemaLimitProblem({ a: [nested] })).toBe('nests deeper than 32 levels');
  });
});

describe('patternGeneratedLength', () => {
  it.each([
    ['abc', 3],
    ['^a{3}$', 3],
    ['a{2,5}b', 6],
    ['a*', 10],
    ['a+', 11],
    ['(ab|cde){4}', 12],
    ['(ab)\\1', 4],
    ['[a-z]{1000}', 1000],
    ['(a{20000}){20000}', 400_000_000],
  ])('When the pattern is %s, then the generator builds at most %d characters', (pattern, length) => {
    expect(patternGeneratedLength(pattern)).toBe(length);
  });

  it('When a pattern in a nested property or a patternProperties name could exceed 10,000 characters, then generation is refused', () => {
    const nested = {
      type: 'object',
      properties: { a: { type: 'string', pattern: 'x{1000}y{1000}'.repeat(6) } },
    };
    expect(generatorPatternProblem(nested)).toMatch(/can generate strings of 12000 characters/);
    const names = { type: 'object', patternProperties: { ['[a-z]{999}[0-9]{999}'.repeat(6)]: {} } };
    expect(generatorPatternProblem(names)).toMatch(/can generate strings of 11988 characters/);
    // Data keywords are values, not patterns.
    expect(generatorPatternProblem({ const: { pattern: 'a{999}'.repeat(20) } })).toBeUndefined();
  });
});

describe('checkReply', () => {
  const check = checkJsonSchema({ type: 'object', required: ['x'] });
  if (!check.ok) throw new Error(check.error);
  it.each([
    ['not JSON', '<html>', 'the response is not JSON'],
    [
      'JSON of the wrong shape',
      '{}',
      "the response does not match output_schema: (root) must have required property 'x'",
    ],
  ])('When the reply is %s, then it is refused with the reason', (_what, body, error) => {
    expect(checkReply(check.validate, body)).toEqual({ ok: false, error });
  });
});

describe('generateInput', () => {
  it('When the schema has required fields, enums and formats, then the generated input is valid', () => {
    const schema = {
      type: 'object',
      properties: {
        when: { type: 'string', format: 'date-time' },
        n: { type: 'integer', minimum: 3, maximum: 3 },
        kind: { enum: ['a', 'b'] },
      },
      required: ['when', 'n', 'kind'],
      additionalProperties: false,
    };
    const check = checkJsonSchema(schema);
    if (!check.ok) throw new Error(check.error);
    const r = generateInput(schema, check.validate);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value).toMatchObject({ n: 3, kind: expect.stringMatching(/^[ab]$/) });
  });

  it('When a pattern could make the generator build more than 10,000 characters, then nothing is generated', () => {
    const schema = { type: 'string', pattern: 'a{1000}'.repeat(11) };
    const check = checkJsonSchema(schema);
    if (!check.ok) throw new Error(check.error);
    expect(generateInput(schema, check.validate)).toEqual({
      ok: false,
      error: expect.stringMatching(
        /^could not generate an input from input_schema: pattern .* can generate strings of 11000 characters/,
      ),
    });
  });

  it('When no value can satisfy the schema, then it fails with a reason', () => {
    const schema = { type: 'integer', minimum: 5, maximum: 1 };
    const check = checkJsonSchema(schema);
    if (!check.ok) throw new Error(check.error);
    const r = generateInput(schema, check.validate);
    expect(r.ok).toBe(false);
  });
});

describe('forFaker', () => {
  it('When a schema uses numeric exclusive bounds (draft 6+), then generated inputs respect them', () => {
    const schema = {
      type: 'object',
      properties: {
        amount: { type: 'number', exclusiveMinimum: 0, maximum: 10 },
        n: { type: 'integer', minimum: 5, exclusiveMinimum: 1, exclusiveMaximum: 7 },
      },
      required: ['amount', 'n'],
    };
    const check = checkJsonSchema(schema);
    if (!check.ok) throw new Error(check.error);
    for (let i = 0; i < 20; i++) {
      const r = generateInput(schema, check.validate, 1);
      expect(r.ok).toBe(true);
      if (r.ok) {
        const v = r.value as { amount: number; n: number };
        expect(v.amount).toBeGreaterThan(0);
        expect(v.amount).toBeLessThanOrEqual(10);
        expect([5, 6]).toContain(v.n);
      }
    }
  });
});

import { checkJsonSchema, generateInput } from '../src/domain/json-schema';

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

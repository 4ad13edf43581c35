import fc from 'fast-check';
import { z } from 'zod';
import { parseModelJson, schemaNameFor } from '../src';
import { defaultInstance } from '../src/testing';

describe('parseModelJson', () => {
  it('When the answer is plain, fenced or surrounded by prose, then the JSON inside is parsed', () => {
    expect(parseModelJson('{"a":1}')).toEqual({ ok: true, value: { a: 1 } });
    expect(parseModelJson('```json\n{"a":2}\n```')).toEqual({ ok: true, value: { a: 2 } });
    expect(parseModelJson('```\n[1,2]\n```')).toEqual({ ok: true, value: [1, 2] });
    expect(parseModelJson('Here you go: {"a":3} Hope it helps.')).toEqual({ ok: true, value: { a: 3 } });
  });

  it('When the answer is empty or not JSON, then an explanation is returned', () => {
    expect(parseModelJson('  ')).toEqual({ ok: false, error: 'the answer was empty' });
    expect(parseModelJson('no json here')).toMatchObject({
      ok: false,
      error: expect.stringContaining('not JSON'),
    });
  });

  it('When any JSON value is serialised, then it parses back to the same value', () => {
    fc.assert(
      fc.property(fc.jsonValue(), (value) => {
        const text = JSON.stringify(value);
        const parsed = parseModelJson(text);
        expect(parsed).toEqual({ ok: true, value: JSON.parse(text) });
      }),
    );
  });
});

describe('schemaNameFor', () => {
  it('When the task has odd characters or is long, then the name fits [a-zA-Z0-9_-]{1,64}', () => {
    fc.assert(
      fc.property(fc.string(), (task) => {
        expect(schemaNameFor(task)).toMatch(/^[a-zA-Z0-9_-]{1,64}$/);
      }),
    );
  });
});

describe('defaultInstance', () => {
  it('When a zod schema with enums, nullables, bounds, tuples and nested arrays is converted, then the default instance is valid', () => {
    const schema = z.strictObject({
      kind: z.enum(['b', 'a']),
      fixed: z.literal('x'),
      score: z.number().int().min(3).max(9),
      ratio: z.number().gt(0).lt(1),
      note: z.string().min(40).nullable(),
      tags: z.array(z.string().max(5)).min(2).max(4),
      reasons: z.array(z.strictObject({ reason: z.string().min(1), when: z.iso.datetime() })).length(3),
      url: z.url(),
      flag: z.boolean(),
      pair: z.tuple([z.string(), z.number()]),
      optional: z.string().optional(),
      union: z.union([z.object({ a: z.string() }), z.number()]),
    });
    const value = defaultInstance(z.toJSONSchema(schema, { io: 'input' }));
    expect(schema.safeParse(value).error?.issues ?? []).toEqual([]);
    expect(value).toMatchObject({ kind: 'b', note: null, flag: false, score: 3 });
  });
});

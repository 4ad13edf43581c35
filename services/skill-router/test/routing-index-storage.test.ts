import fc from 'fast-check';
import { HashedNumbers, PostingTable } from '../src/domain/routing-index-storage';

// The routing index's off-heap postings against a plain model (a Map of arrays), through enough
// keys and entries that every table grows, compacts and shrinks again.
describe('The posting table', () => {
  // Keys that differ in ways a byte-wise table could confuse: case, accents (composed or not),
  // other scripts, astral characters, lone surrogates and the empty string.
  const ODD_KEYS = [
    '',
    'a',
    'A',
    'café',
    'cafe\u0301',
    'Ã©',
    'é',
    '東京',
    '😀',
    '\ud83d',
    '\ude00',
    'x\u0000y',
  ];
  const keyArb = fc.oneof(
    fc.constantFrom(...ODD_KEYS),
    fc.integer({ min: 0, max: 3000 }).map((n) => `k${n}`),
  );
  const opArb = fc.oneof(
    {
      weight: 6,
      arbitrary: fc.record({ kind: fc.constant('push' as const), key: keyArb, value: fc.nat(50) }),
    },
    {
      weight: 3,
      arbitrary: fc.record({ kind: fc.constant('remove' as const), key: keyArb, value: fc.nat(50) }),
    },
    { weight: 1, arbitrary: fc.record({ kind: fc.constant('drop' as const), key: keyArb }) },
  );

  it('When keys are interned, filled, emptied, dropped and reused in any order, then every key finds its own posting, with the entries the model holds', () => {
    fc.assert(
      fc.property(fc.array(opArb, { minLength: 2000, maxLength: 4000 }), (ops) => {
        const table = new PostingTable();
        const model = new Map<string, number[]>();
        for (const op of ops) {
          if (op.kind === 'push') {
            table.push(table.intern(op.key), op.value);
            model.set(op.key, [...(model.get(op.key) ?? []), op.value]);
          } else if (op.kind === 'remove') {
            const id = table.get(op.key);
            const values = model.get(op.key);
            const at = values?.indexOf(op.value) ?? -1;
            expect(id >= 0 ? table.remove(id, op.value) : false).toBe(at >= 0);
            if (values && at >= 0) values.splice(at, 1);
          } else {
            const id = table.get(op.key);
            expect(id >= 0).toBe(model.has(op.key));
            if (id >= 0) table.drop(id);
            model.delete(op.key);
          }
        }
        const check = () => {
          const seen = new Set<number>();
          for (const [key, values] of model) {
            const id = table.get(key);
            expect(id).toBeGreaterThanOrEqual(0);
            expect(seen.has(id)).toBe(false);
            seen.add(id);
            expect(table.keyOf(id)).toBe(key);
            const from = table.entries.start[id] as number;
            const held = [...table.entries.data.subarray(from, from + (table.length[id] as number))];
            expect(held.sort((x, y) => x - y)).toEqual([...values].sort((x, y) => x - y));
          }
          for (const key of ODD_KEYS) if (!model.has(key)) expect(table.get(key)).toBe(-1);
          let inUse = 0;
          table.forEach(() => inUse++);
          expect(inUse).toBe(model.size);
        };
        check();
        // After a full load the service trims the tables: nothing may move out of reach.
        table.trim();
        check();
      }),
      { numRuns: 20 },
    );
  });

  it('When a posting is emptied to one entry, then its room shrinks back and the entry is kept', () => {
    const table = new PostingTable();
    const id = table.intern('swap');
    for (let i = 0; i < 64; i++) table.push(id, i);
    expect(table.entries.size[id]).toBe(64);
    for (let i = 1; i < 64; i++) expect(table.remove(id, i)).toBe(true);
    expect(table.length[id]).toBe(1);
    expect(table.entries.size[id]).toBeLessThanOrEqual(4);
    expect(table.entries.data[table.entries.start[id] as number]).toBe(0);
    expect(table.remove(id, 99)).toBe(false);
  });
});

describe('The hashed numbers', () => {
  it('When numbers whose hashes crowd the end of the table (so that probes wrap around) are added and deleted in any order, then each one is found under its key until it is deleted, and never after', () => {
    fc.assert(
      fc.property(
        fc.array(fc.record({ add: fc.boolean(), n: fc.nat(40) }), { minLength: 100, maxLength: 300 }),
        (ops) => {
          const keyOf = (n: number) => `n${n}`;
          const numbers = new HashedNumbers((n, key) => keyOf(n) === key);
          // The table starts with 2,048 places: these hashes land on its last eight and first three.
          const hashOfN = (n: number) => (n % 11 < 8 ? 2040 + (n % 11) : (n % 11) - 8);
          const model = new Set<number>();
          const wrong: string[] = [];
          for (const [step, { add, n }] of ops.entries()) {
            if (add && !model.has(n)) {
              numbers.add(n, hashOfN(n));
              model.add(n);
            } else if (!add && model.has(n)) {
              numbers.delete(n);
              model.delete(n);
            }
            for (let m = 0; m <= 40; m++) {
              const found = numbers.find(keyOf(m), hashOfN(m));
              if (found !== (model.has(m) ? m : -1)) wrong.push(`after step ${step}: ${m} found as ${found}`);
            }
          }
          expect(wrong).toEqual([]);
        },
      ),
      { numRuns: 100 },
    );
  });
});

describe('The hash of a table', () => {
  it('When two tables are made, then they file the same keys under different hashes (each hashes from a random seed of its own, so registrants cannot choose lexemes that collide)', () => {
    const one = new HashedNumbers(() => false);
    const other = new HashedNumbers(() => false);
    const keys = Array.from({ length: 20 }, (_, i) => `lexeme${i}`);
    const same = keys.filter((key) => one.hash(key) === other.hash(key));
    // Equal by chance for about one key in two billion.
    expect(same.length).toBeLessThanOrEqual(1);
    expect(new Set(keys.map((key) => one.hash(key))).size).toBe(keys.length);
  });
});

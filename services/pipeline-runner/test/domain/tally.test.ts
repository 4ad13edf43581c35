import fc from 'fast-check';
import { nextProgress } from '../../src/domain/progress';
import { riceScore } from '../../src/domain/rice';
import { SUPERMAJORITY, countVotes, verdictFor } from '../../src/domain/tally';

type Vote = 'APPROVE' | 'CONDITIONAL' | 'REJECT';

describe('vote tally', () => {
  it('When every composition of six votes is tallied, then the verdict follows the 4-of-6 rule', () => {
    let seen = 0;
    for (let approve = 0; approve <= 6; approve += 1) {
      for (let conditional = 0; approve + conditional <= 6; conditional += 1) {
        const reject = 6 - approve - conditional;
        const votes: { vote: Vote }[] = [
          ...Array.from({ length: approve }, () => ({ vote: 'APPROVE' as const })),
          ...Array.from({ length: conditional }, () => ({ vote: 'CONDITIONAL' as const })),
          ...Array.from({ length: reject }, () => ({ vote: 'REJECT' as const })),
        ];
        const counts = countVotes(votes);
        expect(counts).toEqual({ approve, conditional, reject });
        const expected =
          approve >= SUPERMAJORITY
            ? 'APPROVED'
            : approve + conditional >= SUPERMAJORITY
              ? 'CONDITIONAL_APPROVED'
              : 'REJECTED';
        expect(verdictFor(counts)).toBe(expected);
        seen += 1;
      }
    }
    expect(seen).toBe(28);
    expect(verdictFor({ approve: 3, conditional: 0, reject: 3 })).toBe('REJECTED');
    expect(verdictFor({ approve: 3, conditional: 1, reject: 2 })).toBe('CONDITIONAL_APPROVED');
    expect(verdictFor({ approve: 4, conditional: 0, reject: 2 })).toBe('APPROVED');
  });

  it('When the order of the votes changes, then the verdict does not', () => {
    fc.assert(
      fc.property(
        fc.array(fc.constantFrom<Vote>('APPROVE', 'CONDITIONAL', 'REJECT'), { minLength: 6, maxLength: 6 }),
        (votes) => {
          const shuffled = [...votes].reverse().map((vote) => ({ vote }));
          expect(verdictFor(countVotes(shuffled))).toBe(
            verdictFor(countVotes(votes.map((vote) => ({ vote })))),
          );
        },
      ),
    );
  });
});

describe('progress', () => {
  it('When steps are reported against any shrinking or growing plan under 99 steps, then progress rises strictly within 1..99', () => {
    fc.assert(
      fc.property(fc.array(fc.integer({ min: 1, max: 60 }), { minLength: 1, maxLength: 60 }), (plans) => {
        let previous = 0;
        plans.forEach((planned, i) => {
          const next = nextProgress(previous, i + 1, planned);
          expect(next).toBeGreaterThan(previous);
          expect(next).toBeLessThanOrEqual(99);
          previous = next;
        });
      }),
    );
  });

  it('When the plan is steady, then progress is proportional', () => {
    expect(nextProgress(0, 13, 26)).toBe(49);
    expect(nextProgress(49, 25, 26)).toBe(95);
  });
});

describe('RICE', () => {
  it('When reach, impact, confidence and effort are given, then score = R × I × C / E rounded to 2 decimals', () => {
    expect(riceScore({ reach: 1000, impact: 2, confidence: 0.8, effort: 3 }).score).toBe(533.33);
    expect(riceScore({ reach: 0, impact: 3, confidence: 1, effort: 1 }).score).toBe(0);
  });
});

import { SESSION_CONFIG_DEFAULTS, SessionConfigInput } from '@repo/schemas';
import { ProveJobInput, ProveResult, ResolvedSessionConfig } from '../src/index';

const common = {
  rounds: [{ round: 1, turns: [{ persona: 'Proposer', content: 'We build it.' }] }],
  feasibility: null,
  session_config: SESSION_CONFIG_DEFAULTS,
  proveSessionId: '6f1c1f53-8a53-4a53-9a53-1a5317a8f0c1',
};
const pivot = {
  verdict: 'PIVOT_OUT',
  report: {
    output: null,
    summary: null,
    pivot_report: {
      declared_by: 'Challenger',
      round: 1,
      reason: 'No buyer',
      new_direction: 'Sell to clinics',
    },
  },
  votes: [],
  vote_counts: { approve: 0, conditional: 0, reject: 0 },
  ...common,
};

describe('compute results', () => {
  it('When a PIVOT_OUT result has no votes and no output, then it validates', () => {
    expect(ProveResult.safeParse(pivot).success).toBe(true);
  });

  it('When a PIVOT_OUT result carries a vote count or an output, then it is refused', () => {
    expect(
      ProveResult.safeParse({ ...pivot, vote_counts: { approve: 1, conditional: 0, reject: 0 } }).success,
    ).toBe(false);
    expect(
      ProveResult.safeParse({ ...pivot, report: { ...pivot.report, output: { kind: 'kill_brief' } } })
        .success,
    ).toBe(false);
  });

  it('When a REJECTED result has a kill brief with other than three reasons, then it is refused', () => {
    const reason = { reason: 'r', evidence: 'e' };
    const rejected = {
      verdict: 'REJECTED',
      report: {
        output: { kind: 'kill_brief', top_reasons: [reason, reason], salvage_paths: ['x'] },
        summary: {
          kind: 'decision_brief',
          decision: 'REJECTED',
          headline: 'h',
          rationale: 'r',
          vote_summary: 'v',
          what_would_change_the_decision: ['w'],
          next_steps: ['n'],
        },
        pivot_report: null,
      },
      votes: Array.from({ length: 6 }, (_, i) => ({
        persona: ['Proposer', 'Challenger', 'Analyst', 'Reviewer', 'Defender', 'Strategist'][i],
        vote: 'REJECT',
        rationale: 'no',
      })),
      vote_counts: { approve: 0, conditional: 0, reject: 6 },
      ...common,
    };
    expect(ProveResult.safeParse(rejected).success).toBe(false);
    rejected.report.output.top_reasons.push(reason);
    expect(ProveResult.safeParse(rejected).error?.issues ?? []).toEqual([]);
  });

  it('When a session_config is resolved from the request form, then it validates as the job-message form', () => {
    const resolved = SessionConfigInput.parse('Profile: Solo\nBudget: $1K');
    expect(ResolvedSessionConfig.parse(resolved)).toEqual(resolved);
    expect(
      ProveJobInput.safeParse({
        idea: 'A CRM for dentists',
        session_config: resolved,
        proveSessionId: 'nope',
      }).success,
    ).toBe(false);
  });
});

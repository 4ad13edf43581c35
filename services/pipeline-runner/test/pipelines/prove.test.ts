import { LlmUnavailableError, isTransient } from '@repo/llm';
import { ProveResult, type ProveJobInput } from '@repo/compute';
import { provePipeline, type ProveState } from '../../src/domain/pipelines';
import {
  proveJobInput,
  scenarioMarker,
  scriptedPipelineResponder,
  type PipelineScenario,
} from '@repo/compute/testing';
import { runToCompletion } from '../../src/testing';
import { startUpstreams, type Upstreams } from '../support/deps';

let up: Upstreams | undefined;
afterEach(async () => {
  await up?.close();
  up = undefined;
});

async function run(scenario: PipelineScenario, input: ProveJobInput = proveJobInput()) {
  up = await startUpstreams(scriptedPipelineResponder(scenario));
  return { up, ...(await runToCompletion(provePipeline, input, up.deps)) };
}

function expectStrictlyRising(progress: number[]): void {
  progress.forEach((p, i) => {
    expect(Number.isInteger(p)).toBe(true);
    expect(p).toBeGreaterThanOrEqual(1);
    expect(p).toBeLessThanOrEqual(99);
    if (i > 0) expect(p).toBeGreaterThan(progress[i - 1]!);
  });
}

/** Steps the pipeline from init `count` times (state through JSON) and returns the state reached. */
async function stateAfter(input: ProveJobInput, count: number, deps: Upstreams['deps']): Promise<ProveState> {
  let state = provePipeline.init(input);
  for (let i = 0; i < count; i += 1) {
    const outcome = await provePipeline.step(input, state, deps);
    if (outcome.kind !== 'continue') throw new Error('finished early');
    state = provePipeline.state.parse(JSON.parse(JSON.stringify(outcome.state)));
  }
  return state;
}

describe('prove pipeline', () => {
  it('When five panelists approve and one is conditional, then the verdict is APPROVED with a roadmap and a Lean Canvas', async () => {
    const { result, steps, up } = await run('approved');
    expect(ProveResult.safeParse(result).success).toBe(true);
    if (result.verdict !== 'APPROVED') throw new Error(`verdict ${result.verdict}`);
    expect(result.vote_counts).toEqual({ approve: 5, conditional: 1, reject: 0 });
    expect(result.votes.map((v) => v.persona)).toEqual([
      'Proposer',
      'Challenger',
      'Analyst',
      'Reviewer',
      'Defender',
      'Strategist',
    ]);
    expect(result.votes[1]).toMatchObject({
      vote: 'CONDITIONAL',
      conditions: ['challenger: ten paying pilots within 8 weeks'],
    });
    expect(result.votes[0]).not.toHaveProperty('conditions');
    expect(result.report.output.kind).toBe('execution_roadmap');
    expect(result.report.output.conditions).toEqual(['challenger: ten paying pilots within 8 weeks']);
    expect(result.report.summary.kind).toBe('lean_canvas');
    expect(result.report.pivot_report).toBeNull();
    // The Strategist closed the debate after round 2.
    expect(result.rounds.map((r) => r.turns.length)).toEqual([6, 6]);
    expect(steps).toHaveLength(12 + 6 + 1);
    expectStrictlyRising(steps.map((s) => s.progressPct));
    expect(steps.map((s) => s.label)).toContain('Round 2 · Strategist · debate closed');
    expect(up.llm.calls.map((c) => c.task).slice(-8)).toEqual([
      'prove_vote_proposer',
      'prove_vote_challenger',
      'prove_vote_analyst',
      'prove_vote_reviewer',
      'prove_vote_defender',
      'prove_vote_strategist',
      'prove_roadmap',
      'prove_lean_canvas',
    ]);
    expect(result.feasibility).toMatchObject({ lean_feasibility: 'LEAN_FIT', low_roi: false });
    expect(result.session_config).toEqual(proveJobInput().session_config);
  });

  it('When approvals fall short but approvals plus conditionals reach four, then the verdict is CONDITIONAL_APPROVED with every condition in the roadmap', async () => {
    const { result, steps } = await run('conditional');
    if (result.verdict !== 'CONDITIONAL_APPROVED') throw new Error(`verdict ${result.verdict}`);
    expect(result.vote_counts).toEqual({ approve: 2, conditional: 3, reject: 1 });
    expect(result.report.output.conditions).toEqual([
      'analyst: ten paying pilots within 8 weeks',
      'reviewer: ten paying pilots within 8 weeks',
      'strategist: ten paying pilots within 8 weeks',
    ]);
    expect(result.rounds).toHaveLength(3);
    expect(steps).toHaveLength(18 + 6 + 1);
    expectStrictlyRising(steps.map((s) => s.progressPct));
  });

  it('When four panelists reject, then the verdict is REJECTED with a three-reason kill brief and a decision brief', async () => {
    const { result } = await run('rejected');
    if (result.verdict !== 'REJECTED') throw new Error(`verdict ${result.verdict}`);
    expect(result.vote_counts).toEqual({ approve: 1, conditional: 1, reject: 4 });
    expect(result.report.output.kind).toBe('kill_brief');
    expect(result.report.output.top_reasons).toHaveLength(3);
    expect(result.report.output.salvage_paths.length).toBeGreaterThan(0);
    expect(result.report.summary).toMatchObject({
      kind: 'decision_brief',
      decision: 'REJECTED',
      vote_summary: '1 approve, 1 conditional, 4 reject',
    });
    expect(result.feasibility).toMatchObject({ lean_feasibility: 'NOT_LEAN', low_roi: true, cost_ratio: 8 });
  });

  it('When a panelist declares PIVOT_OUT, then the job ends at once with the pivot report, no vote and no output', async () => {
    const { result, steps, up } = await run('pivot_out');
    expect(ProveResult.safeParse(result).success).toBe(true);
    expect(result).toMatchObject({
      verdict: 'PIVOT_OUT',
      votes: [],
      vote_counts: { approve: 0, conditional: 0, reject: 0 },
      report: {
        output: null,
        summary: null,
        pivot_report: {
          declared_by: 'Challenger',
          round: 1,
          new_direction: 'Sell the same engine to licensed clinics as a B2B tool',
        },
      },
    });
    expect(result.rounds).toEqual([
      {
        round: 1,
        turns: [
          expect.objectContaining({ persona: 'Proposer' }),
          expect.objectContaining({ persona: 'Challenger' }),
        ],
      },
    ]);
    expect(steps).toHaveLength(1);
    expect(up.llm.calls.map((c) => c.task)).toEqual(['prove_turn_proposer', 'prove_turn_challenger']);
    expect(result.feasibility).toBeNull();
  });

  it('When a panelist asks for searches, then the results become its sources and later speakers see them', async () => {
    const { result, up } = await run('conditional');
    const challenger = result.rounds[0]!.turns[1]!;
    expect(challenger.search_queries).toEqual(['challenger market evidence 1']);
    expect(challenger.sources).toHaveLength(3);
    expect(challenger.sources![0]!.url).toMatch(/^https:\/\/example\.org\//);
    expect(up.searx.queries).toContain('challenger market evidence 1');
    const analystCall = up.llm.calls.find((c) => c.task === 'prove_turn_analyst')!;
    expect(analystCall.messages[1]!.content).toContain('[S1] challenger market evidence 1');
    expect(analystCall.messages[1]!.content).toContain(challenger.sources![0]!.url);
    // Turns that asked for nothing carry no sources field.
    expect(result.rounds[0]!.turns[0]).not.toHaveProperty('sources');
  });

  it('When no search provider is configured, then the debate runs without sources and tells the panel', async () => {
    up = await startUpstreams(scriptedPipelineResponder('approved'));
    const { result } = await runToCompletion(provePipeline, proveJobInput(), up.depsWithoutSearch);
    expect(result.rounds.flatMap((r) => r.turns).some((t) => t.sources || t.search_queries)).toBe(false);
    expect(up.searx.queries).toEqual([]);
    expect(up.llm.calls[0]!.messages[0]!.content).toContain('Web search is not available');
  });

  it('When search fails, then the turn still completes without sources', async () => {
    up = await startUpstreams(scriptedPipelineResponder('conditional'));
    up.searx.fail({ status: 502, times: 1000 });
    const { result } = await runToCompletion(provePipeline, proveJobInput(), up.deps);
    expect(result.verdict).toBe('CONDITIONAL_APPROVED');
    expect(result.rounds.flatMap((r) => r.turns).some((t) => t.sources)).toBe(false);
    expect(up.searx.queries.length).toBeGreaterThan(0);
  });

  it('When the same step is run twice from the same state, then both outcomes are valid and the state is not mutated', async () => {
    up = await startUpstreams(scriptedPipelineResponder('conditional'));
    const input = proveJobInput();
    for (const count of [0, 5, 18, 24]) {
      const state = await stateAfter(input, count, up.deps);
      const snapshot = JSON.stringify(state);
      const first = await provePipeline.step(input, state, up.deps);
      const second = await provePipeline.step(input, state, up.deps);
      expect(JSON.stringify(state)).toBe(snapshot);
      expect(second.kind).toBe(first.kind);
      expect(second.label).toBe(first.label);
      if (first.kind === 'continue' && second.kind === 'continue') {
        expect(second.progressPct).toBe(first.progressPct);
        expect(provePipeline.state.safeParse(second.state).success).toBe(true);
      } else if (second.kind === 'done') {
        expect(ProveResult.safeParse(second.result).success).toBe(true);
      }
    }
  });

  it('When the LLM is down for a step, then the step throws a transient error and succeeds when re-run from the same state', async () => {
    up = await startUpstreams(scriptedPipelineResponder('approved'));
    const input = proveJobInput();
    const state = await stateAfter(input, 3, up.deps);
    up.llm.fail({ status: 503, times: 1 });
    const error = await provePipeline.step(input, state, up.deps).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(LlmUnavailableError);
    expect(isTransient(error)).toBe(true);
    const outcome = await provePipeline.step(input, state, up.deps);
    expect(outcome).toMatchObject({ kind: 'continue', label: 'Round 1 · Reviewer' });
  });

  it('When a CONDITIONAL vote comes without conditions, then the repair turn obtains them', async () => {
    const base = scriptedPipelineResponder('conditional');
    up = await startUpstreams((request) =>
      request.task === 'prove_vote_analyst' && request.taskCallIndex === 0
        ? { vote: 'CONDITIONAL', rationale: 'maybe', conditions: [] }
        : base(request),
    );
    const { result } = await runToCompletion(provePipeline, proveJobInput(), up.deps);
    expect(result.votes.find((v) => v.persona === 'Analyst')).toMatchObject({
      vote: 'CONDITIONAL',
      conditions: ['analyst: ten paying pilots within 8 weeks'],
    });
    expect(up.llm.calls.filter((c) => c.task === 'prove_vote_analyst')).toHaveLength(2);
  });

  it('When the founders have more budget, time and people, then the Analyst feasibility of the same estimates improves', async () => {
    const generous = proveJobInput({
      session_config: {
        profile: 'Enterprise',
        budget: '$100K+',
        timeline: '3-6 months',
        revenue_threshold: '$10K/year',
        founder_signal: null,
      },
    });
    const { result } = await run('rejected', generous);
    expect(result.feasibility).toMatchObject({
      lean_feasibility: 'LEAN_FIT',
      capacity_factor: 5,
      adjusted_build_weeks: 8,
      low_roi: false,
    });
  });

  it('When the founder signal is set, then every prompt carries it', async () => {
    const { up } = await run(
      'pivot_out',
      proveJobInput({
        session_config: {
          profile: 'Solo',
          budget: '$1K',
          timeline: '2 weeks',
          revenue_threshold: '$10K/year',
          founder_signal: 'ex-dentist with 200 clinic contacts',
        },
      }),
    );
    for (const call of up.llm.calls)
      expect(call.messages[1]!.content).toContain('Founder signal: ex-dentist with 200 clinic contacts');
  });

  it('When one scripted server serves concurrent jobs whose ideas carry scenario markers, then each job reaches its own verdict', async () => {
    up = await startUpstreams(scriptedPipelineResponder());
    const scenarios = ['rejected', 'approved', 'pivot_out', 'conditional', 'approved', 'rejected'] as const;
    const runs = await Promise.all(
      scenarios.map((scenario) =>
        runToCompletion(
          provePipeline,
          proveJobInput({ idea: `Dental waitlist filler ${scenarioMarker(scenario)} for small clinics.` }),
          up!.deps,
        ),
      ),
    );
    expect(runs.map((r) => r.result.verdict)).toEqual([
      'REJECTED',
      'APPROVED',
      'PIVOT_OUT',
      'CONDITIONAL_APPROVED',
      'APPROVED',
      'REJECTED',
    ]);
    expect(runs.map((r) => r.steps.length)).toEqual([25, 19, 1, 25, 19, 25]);
  });

  it('When the job input or state is malformed, then the schemas refuse it', () => {
    expect(provePipeline.input.safeParse({ ...proveJobInput(), idea: 'short' }).success).toBe(false);
    expect(provePipeline.input.safeParse({ ...proveJobInput(), extra: 1 }).success).toBe(false);
    expect(
      provePipeline.state.safeParse({ ...provePipeline.init(proveJobInput()), speaker: 6 }).success,
    ).toBe(false);
    expect(
      provePipeline.state.safeParse(JSON.parse(JSON.stringify(provePipeline.init(proveJobInput())))).success,
    ).toBe(true);
  });
});

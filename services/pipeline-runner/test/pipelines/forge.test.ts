import type { SessionConfig } from '@repo/schemas';
import { ForgeResult, type ForgeJobInput } from '@repo/compute';
import { forgePipeline, type ForgeState } from '../../src/domain/pipelines';
import { forgeJobInput, scriptedPipelineResponder } from '@repo/compute/testing';
import { runToCompletion } from '../../src/testing';
import { startUpstreams, type Upstreams } from '../support/deps';

let up: Upstreams | undefined;
afterEach(async () => {
  await up?.close();
  up = undefined;
});

async function run(input: ForgeJobInput = forgeJobInput()) {
  up = await startUpstreams(scriptedPipelineResponder('forge'));
  return { up, ...(await runToCompletion(forgePipeline, input, up.deps)) };
}

function withConfig(patch: Partial<SessionConfig>): ForgeJobInput {
  const input = forgeJobInput();
  return { ...input, session_config: { ...input.session_config, ...patch } };
}

/** The result's ideas by their refined name prefix (I1 → "Clinic Scheduler Pro", ...). */
function byName(result: ForgeResult, name: string) {
  const idea = result.ideas.find((i) => i.name === name);
  if (!idea) throw new Error(`no idea ${name}`);
  return idea;
}

describe('forge pipeline', () => {
  it('When the brainstorm runs its five rounds, then the result holds ranked ideas with every field and the transcript', async () => {
    const { result, steps, up, finalLabel } = await run();
    expect(ForgeResult.safeParse(result).error?.issues ?? []).toEqual([]);
    expect(result.rounds.map((r) => [r.round, r.title, r.transcript.length])).toEqual([
      [1, 'Divergent generation', 4],
      [2, 'Critique', 4],
      [3, 'Refinement', 5],
      [4, 'Scoring', 5],
      [5, 'Final ranking', 1],
    ]);
    expect(result.rounds[0]!.transcript.map((t) => t.agent)).toEqual([
      'Trend Scout',
      'Pain Miner',
      'Contrarian',
      'Business Modeler',
    ]);
    // Fatal critiques kept I6 and I7 out; the chair ranked I1-I4 and I5 was appended.
    expect(result.ideas.map((i) => [i.rank, i.name])).toEqual([
      [1, 'Clinic Scheduler Pro'],
      [2, 'Invoice Chaser Pro'],
      [3, 'Compliance Copilot Pro'],
      [4, 'Shift Swap Pro'],
      [5, 'Menu Margin Pro'],
    ]);
    const first = result.ideas[0]!;
    expect(first.rice).toEqual({ reach: 500, impact: 1, confidence: 0.8, effort: 2, score: 200 });
    expect(first.kill_score).toBe(10);
    expect(first.key_metrics.length).toBeGreaterThan(0);
    expect(first.validation_plan.length).toBeGreaterThan(0);
    expect(first.kill_switches.length).toBeGreaterThan(0);
    expect(result.sectors).toEqual(['health-tech']);
    expect(result.scout_generated_from).toEqual([
      { sector: 'health-tech', generatedFrom: '2026-11-21T06:00:00.000Z' },
    ]);
    expect(steps).toHaveLength(4 + 4 + 5 + 5);
    expect(finalLabel).toBe('Round 5 · final ranking');
    const tasks = up.llm.calls.map((c) => c.task);
    expect(new Set(tasks)).toEqual(
      new Set(['forge_r1_ideas', 'forge_r2_critique', 'forge_r3_refine', 'forge_r4_score', 'forge_r5_rank']),
    );
    expect(tasks).toHaveLength(19);
  });

  it('When progress is reported, then it rises strictly and stays within 1..99 until the result', async () => {
    const { steps } = await run();
    const progress = steps.map((s) => s.progressPct);
    progress.forEach((p, i) => {
      expect(p).toBeGreaterThanOrEqual(1);
      expect(p).toBeLessThanOrEqual(99);
      if (i > 0) expect(p).toBeGreaterThan(progress[i - 1]!);
    });
  });

  it('When the scout data, context and product modes are given, then the agents see them', async () => {
    const { up } = await run();
    const prompt = up.llm.calls[0]!.messages[1]!.content;
    expect(prompt).toContain('No-show prevention for small clinics');
    expect(prompt).toContain('Pain: scheduling');
    expect(prompt).toContain('Trend: AI receptionists');
    expect(prompt).toContain('no-show (31)');
    expect(prompt).toContain('Two ex-clinic-managers');
    expect(prompt).toContain('B2B SaaS');
    expect(prompt).toContain('Budget: $10K');
  });

  it('When the default session_config is used, then each idea gets the lean feasibility of its estimates and LOW_ROI only below $100K/year', async () => {
    const { result } = await run();
    expect(byName(result, 'Clinic Scheduler Pro')).toMatchObject({
      lean_feasibility: 'LEAN_FIT',
      tags: ['b2b', 'saas'],
    });
    expect(byName(result, 'Invoice Chaser Pro').lean_feasibility).toBe('STRETCH');
    expect(byName(result, 'Compliance Copilot Pro').lean_feasibility).toBe('NOT_LEAN');
    expect(byName(result, 'Shift Swap Pro')).toMatchObject({
      lean_feasibility: 'LEAN_FIT',
      tags: ['b2b', 'saas', 'LOW_ROI'],
      projected_annual_revenue_usd: 30_000,
    });
    // The model tagged every idea LOW_ROI; only the one below the threshold keeps it.
    expect(result.ideas.filter((i) => i.tags.includes('LOW_ROI')).map((i) => i.name)).toEqual([
      'Shift Swap Pro',
    ]);
  });

  it('When the revenue threshold changes, then LOW_ROI follows it', async () => {
    const low = await run(withConfig({ revenue_threshold: '$10K/year' }));
    expect(low.result.ideas.some((i) => i.tags.includes('LOW_ROI'))).toBe(false);
    await up?.close();
    const high = await run(withConfig({ revenue_threshold: '$1M+/year' }));
    expect(high.result.ideas.every((i) => i.tags.includes('LOW_ROI'))).toBe(true);
  });

  it('When the budget grows, then the LEAN_FIT band widens for the same estimates', async () => {
    const { result } = await run(withConfig({ budget: '$100K+', timeline: '3-6 months' }));
    expect(byName(result, 'Invoice Chaser Pro').lean_feasibility).toBe('LEAN_FIT');
    // $90K fits the budget but 30 weeks exceed 26: a stretch.
    expect(byName(result, 'Compliance Copilot Pro')).toMatchObject({
      lean_feasibility: 'STRETCH',
      feasibility: { cost_ratio: 0.9, time_ratio: 1.15 },
    });
  });

  it('When the profile changes, then the feasibility math is calibrated by team capacity', async () => {
    const solo = await run(withConfig({ profile: 'Solo' }));
    // 6 weeks for a 2-3 person team take a solo founder 12: 1.5x the 8-week timeline.
    expect(byName(solo.result, 'Clinic Scheduler Pro')).toMatchObject({
      lean_feasibility: 'STRETCH',
      feasibility: { capacity_factor: 0.5, adjusted_build_weeks: 12 },
    });
    await up?.close();
    const funded = await run(withConfig({ profile: 'Funded Team (6-15)', budget: '$100K+' }));
    expect(byName(funded.result, 'Compliance Copilot Pro')).toMatchObject({
      lean_feasibility: 'STRETCH',
      feasibility: { adjusted_build_weeks: 10 },
    });
    expect(byName(funded.result, 'Invoice Chaser Pro').lean_feasibility).toBe('LEAN_FIT');
  });

  it('When a step is re-run from the same state, then it gives the same kind of valid outcome and leaves the state untouched', async () => {
    up = await startUpstreams(scriptedPipelineResponder('forge'));
    const input = forgeJobInput();
    let state: ForgeState = forgePipeline.init(input);
    let done = false;
    for (let i = 0; i < 19 && !done; i += 1) {
      const snapshot = JSON.stringify(state);
      const first = await forgePipeline.step(input, state, up.deps);
      const again = await forgePipeline.step(input, state, up.deps);
      expect(JSON.stringify(state)).toBe(snapshot);
      expect(again.kind).toBe(first.kind);
      expect(again.label).toBe(first.label);
      if (again.kind === 'done') {
        expect(ForgeResult.safeParse(again.result).success).toBe(true);
        done = true;
        break;
      }
      expect(forgePipeline.state.safeParse(JSON.parse(JSON.stringify(again.state))).success).toBe(true);
      state = forgePipeline.state.parse(JSON.parse(JSON.stringify(again.state)));
    }
    expect(done).toBe(true);
  });

  it('When agents propose duplicate names, then each idea enters the pool once', async () => {
    up = await startUpstreams((request) =>
      request.task === 'forge_r1_ideas'
        ? {
            ideas: [
              { name: 'Same Idea', problem: 'p', target_market: 'm', why_now: 'w', revenue_model: 'r' },
              { name: 'same-idea!', problem: 'p', target_market: 'm', why_now: 'w', revenue_model: 'r' },
            ],
          }
        : scriptedPipelineResponder('forge')(request),
    );
    const { result } = await runToCompletion(forgePipeline, forgeJobInput(), up.deps);
    expect(result.ideas).toHaveLength(1);
    expect(result.rounds[0]!.transcript[1]!.content).toContain('No new idea');
  });

  it('When the model answers longer lists or decimal scores than asked, then they are trimmed and rounded without a repair turn', async () => {
    const base = scriptedPipelineResponder('forge');
    up = await startUpstreams(async (request) => {
      const answer = (await base(request)) as Record<string, unknown>;
      if (request.task === 'forge_r1_ideas') {
        const ideas = answer.ideas as { name: string }[];
        return {
          ideas: [
            ...ideas,
            ...ideas.map((i) => ({ ...i, name: `${i.name} Two` })),
            { ...ideas[0]!, name: 'Extra' },
          ],
        };
      }
      if (request.task === 'forge_r4_score')
        return { ...answer, kill_score: 33.7, rice: { ...(answer.rice as object), reach: 1234.4 } };
      return answer;
    });
    const { result } = await runToCompletion(forgePipeline, forgeJobInput(), up.deps);
    expect(up.llm.calls).toHaveLength(19);
    expect(result.rounds[0]!.transcript[0]!.content.split('\n')).toHaveLength(3);
    expect(result.ideas.every((i) => i.kill_score === 34 && i.rice.reach === 1234)).toBe(true);
  });

  it('When no answers are scripted, then the schema defaults still complete a valid result', async () => {
    up = await startUpstreams(() => undefined);
    const { result } = await runToCompletion(
      forgePipeline,
      forgeJobInput({ scout: [], sectors: [] }),
      up.deps,
    );
    expect(ForgeResult.safeParse(result).success).toBe(true);
    expect(result.ideas.length).toBeGreaterThan(0);
  });

  it('When the job input is malformed, then the input schema refuses it', () => {
    expect(forgePipeline.input.safeParse({ ...forgeJobInput(), context: 'x'.repeat(10_001) }).success).toBe(
      false,
    );
    expect(
      forgePipeline.input.safeParse({ ...forgeJobInput(), session_config: { budget: '$7K' } }).success,
    ).toBe(false);
    expect(forgePipeline.input.safeParse(forgeJobInput()).success).toBe(true);
  });
});

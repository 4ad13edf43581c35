import type { ScriptedRequest, ScriptedRespond } from '@repo/llm/testing';
import { scoutAnswer } from './scout-responder';

/** The scenarios {@link scriptedPipelineResponder} can play. */
export type PipelineScenario = 'approved' | 'conditional' | 'rejected' | 'pivot_out' | 'forge';

const VOTES: Record<
  'approved' | 'conditional' | 'rejected',
  Record<string, 'APPROVE' | 'CONDITIONAL' | 'REJECT'>
> = {
  // 5 approve, 1 conditional -> APPROVED
  approved: {
    proposer: 'APPROVE',
    challenger: 'CONDITIONAL',
    analyst: 'APPROVE',
    reviewer: 'APPROVE',
    defender: 'APPROVE',
    strategist: 'APPROVE',
  },
  // 2 approve, 3 conditional, 1 reject -> CONDITIONAL_APPROVED
  conditional: {
    proposer: 'APPROVE',
    challenger: 'REJECT',
    analyst: 'CONDITIONAL',
    reviewer: 'CONDITIONAL',
    defender: 'APPROVE',
    strategist: 'CONDITIONAL',
  },
  // 1 approve, 1 conditional, 4 reject -> REJECTED
  rejected: {
    proposer: 'APPROVE',
    challenger: 'REJECT',
    analyst: 'REJECT',
    reviewer: 'REJECT',
    defender: 'CONDITIONAL',
    strategist: 'REJECT',
  },
};

/** Ideas proposed in forge round 1, two per agent call (by call order). */
const FORGE_IDEAS = [
  [
    'Clinic Scheduler',
    'Dental clinics lose 12% of revenue to no-shows',
    'independent dental clinics in the US',
  ],
  ['Invoice Chaser', 'Freelancers wait 45 days on average to be paid', 'freelance designers and developers'],
  ['Compliance Copilot', 'Small fintechs drown in KYC paperwork', 'seed-stage fintech startups'],
  [
    'Shift Swap',
    'Hourly workers cannot swap shifts without a manager',
    'restaurant chains with 5-50 locations',
  ],
  ['Menu Margin', 'Restaurants do not know which dishes lose money', 'independent restaurants'],
  ['Grant Finder', 'Nonprofits miss grants they qualify for', 'small nonprofits'],
  ['Lease Reader', 'Tenants sign commercial leases they do not understand', 'small retail tenants'],
  ['Churn Radar', 'SaaS founders notice churn too late', 'bootstrapped B2B SaaS companies'],
] as const;

/**
 * Estimates per forge idea id (I1, I2, ...), chosen so that with the default session_config ($10K,
 * 4-8 weeks, Small Team (2-3), $100K/year) the shortlist covers every band: LEAN_FIT, STRETCH,
 * NOT_LEAN, and a LOW_ROI idea.
 */
const FORGE_ESTIMATES: Record<string, { cost: number; weeks: number; revenue: number }> = {
  I1: { cost: 6_000, weeks: 6, revenue: 240_000 }, // LEAN_FIT
  I2: { cost: 15_000, weeks: 10, revenue: 400_000 }, // STRETCH
  I3: { cost: 90_000, weeks: 30, revenue: 900_000 }, // NOT_LEAN
  I4: { cost: 3_000, weeks: 4, revenue: 30_000 }, // LEAN_FIT + LOW_ROI
  I5: { cost: 8_000, weeks: 8, revenue: 120_000 }, // LEAN_FIT
};

function lastUser(request: ScriptedRequest): string {
  return [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
}

function ids(text: string, pattern: RegExp): string[] {
  const out: string[] = [];
  for (const match of text.matchAll(pattern)) if (match[1] && !out.includes(match[1])) out.push(match[1]);
  return out;
}

const AGENTS = ['Trend Scout', 'Pain Miner', 'Contrarian', 'Business Modeler'];

/** The index of the round-1 agent named in the system prompt ("You are the Pain Miner"). */
function agentIndex(system: string): number {
  return Math.max(
    0,
    AGENTS.findIndex((a) => system.includes(`You are the ${a}.`)),
  );
}

/** The scenario marker a prove idea may carry, e.g. `[scenario:rejected]`, see {@link scriptedPipelineResponder}. */
export function scenarioMarker(scenario: Exclude<PipelineScenario, 'forge'>): string {
  return `[scenario:${scenario}]`;
}

function proveAnswer(scenario: Exclude<PipelineScenario, 'forge'>, request: ScriptedRequest): unknown {
  const { task } = request;
  // Everything is derived from the request itself (never from call counters), so one scripted server
  // can serve many concurrent jobs.
  const round = Number(/Round (\d) of at most/.exec(lastUser(request))?.[1] ?? '1');
  if (task.startsWith('prove_turn_')) {
    const persona = task.slice('prove_turn_'.length);
    const turn: Record<string, unknown> = {
      content: `${persona} (round ${round}): ${scenario === 'rejected' ? 'the economics do not work for this team' : 'customers confirm the pain and will pay'}.`,
      search_queries:
        persona === 'analyst' || persona === 'challenger' ? [`${persona} market evidence ${round}`] : [],
      pivot_out: null,
      end_debate: scenario === 'approved' && persona === 'strategist' && round === 2,
    };
    if (scenario === 'pivot_out' && persona === 'challenger' && round === 1) {
      turn.pivot_out = {
        reason: 'Regulation makes the consumer version illegal in most states',
        new_direction: 'Sell the same engine to licensed clinics as a B2B tool',
      };
    }
    if (persona === 'analyst') {
      turn.estimates =
        scenario === 'rejected'
          ? {
              estimated_build_cost_usd: 80_000,
              estimated_build_weeks: 40,
              projected_annual_revenue_usd: 20_000,
            }
          : {
              estimated_build_cost_usd: 4_000,
              estimated_build_weeks: 6,
              projected_annual_revenue_usd: 250_000,
            };
    }
    return turn;
  }
  if (task.startsWith('prove_vote_')) {
    const persona = task.slice('prove_vote_'.length);
    const vote = scenario === 'pivot_out' ? 'REJECT' : (VOTES[scenario][persona] ?? 'REJECT');
    return {
      vote,
      rationale: `${persona} votes ${vote} after the debate.`,
      conditions: vote === 'CONDITIONAL' ? [`${persona}: ten paying pilots within 8 weeks`] : [],
    };
  }
  switch (task) {
    case 'prove_roadmap':
      return {
        phases: [
          {
            name: 'Validate',
            weeks: 2,
            goals: ['10 customer interviews'],
            deliverables: ['interview notes', 'landing page'],
          },
          { name: 'Build MVP', weeks: 4, goals: ['first paying pilot'], deliverables: ['MVP'] },
        ],
        milestones: [
          { week: 2, milestone: 'validation decision' },
          { week: 6, milestone: 'first paying customer' },
        ],
        risks: [{ risk: 'slow sales cycle', mitigation: 'start with owner-operated clinics' }],
      };
    case 'prove_lean_canvas':
      return {
        problem: ['no-shows cost revenue'],
        customer_segments: ['independent clinics'],
        unique_value_proposition: 'Fill every chair, automatically',
        solution: ['automated reminders and waitlist'],
        channels: ['dental associations'],
        revenue_streams: ['$99/month per clinic'],
        cost_structure: ['SMS fees', 'hosting'],
        key_metrics: ['no-show rate'],
        unfair_advantage: 'integration with the top two practice-management systems',
      };
    case 'prove_kill_brief':
      return {
        top_reasons: [
          { reason: 'Build cost is 8x the budget', evidence: 'Analyst estimate of $80K' },
          { reason: 'Revenue below the threshold', evidence: 'projected $20K/year' },
          { reason: 'Entrenched incumbents', evidence: 'Challenger round 1' },
        ],
        salvage_paths: ['Narrow to one vertical', 'License the engine to an incumbent'],
      };
    case 'prove_decision_brief':
      return {
        headline: 'Do not pursue as proposed',
        rationale: 'The idea needs far more money and time than this team has.',
        what_would_change_the_decision: ['a pilot customer prepaying the build'],
        next_steps: ['Test the narrowed vertical with 5 interviews'],
      };
    default:
      return undefined;
  }
}

function forgeAnswer(request: ScriptedRequest): unknown {
  const { task } = request;
  const user = lastUser(request);
  const system = request.messages.find((m) => m.role === 'system')?.content ?? '';
  switch (task) {
    case 'forge_r1_ideas':
      return {
        ideas: [0, 1].map((k) => {
          const idea = FORGE_IDEAS[(agentIndex(system) * 2 + k) % FORGE_IDEAS.length] ?? FORGE_IDEAS[0];
          return {
            name: idea[0],
            problem: idea[1],
            target_market: idea[2],
            why_now: 'AI agents make the service cheap to deliver',
            revenue_model: 'monthly subscription',
          };
        }),
      };
    case 'forge_r2_critique': {
      const candidates = ids(user, /^- (I\d+) "/gm);
      // I6 and I7 draw fatal critiques so the shortlist is I1-I5.
      return {
        critiques: candidates.map((id) => ({
          idea_id: id,
          critique: `${id}: distribution is unproven`,
          severity: id === 'I6' || id === 'I7' ? 'fatal' : id === 'I8' ? 'major' : 'minor',
        })),
      };
    }
    case 'forge_r3_refine': {
      const id = /# Candidate (I\d+)/.exec(user)?.[1] ?? 'I1';
      const e = FORGE_ESTIMATES[id] ?? { cost: 5_000, weeks: 5, revenue: 150_000 };
      return {
        name: `${FORGE_IDEAS[Number(id.slice(1)) - 1]?.[0] ?? id} Pro`,
        problem: 'A sharp, validated problem statement',
        target_market: 'A narrow beachhead segment',
        why_now: 'Costs of the enabling technology fell 10x',
        revenue_model: '$149/month subscription',
        moat: 'proprietary workflow data',
        key_metrics: ['weekly active accounts', 'net revenue retention'],
        validation_plan: ['20 interviews', 'concierge pilot with 3 customers'],
        kill_switches: ['fewer than 3 of 20 interviewees would pay'],
        tags: ['b2b', 'saas', 'LOW_ROI'],
        estimated_build_cost_usd: e.cost,
        estimated_build_weeks: e.weeks,
        projected_annual_revenue_usd: e.revenue,
      };
    }
    case 'forge_r4_score': {
      const id = /# Idea\n(I\d+)/.exec(user)?.[1] ?? 'I1';
      const n = Number(id.slice(1));
      return {
        rice: { reach: 500 * n, impact: 1, confidence: 0.8, effort: 2 },
        kill_score: 10 * n,
        kill_reasons: [`${id}: crowded market`],
      };
    }
    case 'forge_r5_rank': {
      // The chair ranks all but the last idea (lowest id first; a lone idea is ranked); the runner appends the rest.
      const listed = ids(user, /^(I\d+) "/gm);
      return {
        ranking: (listed.length > 1 ? listed.slice(0, -1) : listed).map((id) => ({
          idea_id: id,
          rationale: `${id} balances reach and feasibility`,
        })),
        summary: 'Five ideas survived the critique.',
      };
    }
    default:
      return undefined;
  }
}

/**
 * A `respond` function for `startScriptedLlm` (`@repo/llm/testing`) that answers every task of the
 * compute pipelines so that the given scenario is reached:
 *
 * - `approved`: votes 5 approve + 1 conditional → APPROVED; the Strategist closes the debate after
 *   round 2 (12 turns, 6 votes, 2 report steps);
 * - `conditional`: 2 approve, 3 conditional, 1 reject → CONDITIONAL_APPROVED after 3 rounds;
 * - `rejected`: 1 approve, 1 conditional, 4 reject → REJECTED after 3 rounds; the Analyst's estimates
 *   are NOT_LEAN and LOW_ROI;
 * - `pivot_out`: the Challenger declares PIVOT_OUT in round 1 (2 steps, no vote);
 * - `forge`: 8 ideas (two per agent), fatal critiques for I6/I7 so I1–I5 are shortlisted with
 *   LEAN_FIT, STRETCH, NOT_LEAN and LEAN_FIT+LOW_ROI estimates; the chair ranks all but the last idea.
 *
 * Forge tasks are always answered as in `forge`, scout tasks (`scout_*`) by {@link scoutAnswer} (the
 * fixture feeds' figures, `FIXTURE_SCAN`). With `forge` (the default), a prove job plays the
 * scenario named by a marker in its idea ({@link scenarioMarker}, e.g. `[scenario:rejected]`), else
 * `approved`: one scripted server can then serve many concurrent jobs of different outcomes. Answers
 * depend only on the request (round, persona, agent, ids in the prompt), never on call order. The
 * Analyst and Challenger ask for one search per turn. Unknown tasks get the schema default.
 * @param scenario the prove outcome to reach, or `forge` to read it from the idea
 */
export function scriptedPipelineResponder(scenario: PipelineScenario = 'forge'): ScriptedRespond {
  return (request) => {
    if (request.task.startsWith('forge_')) return forgeAnswer(request);
    if (request.task.startsWith('scout_')) return scoutAnswer(request);
    if (scenario !== 'forge') return proveAnswer(scenario, request);
    const marked = /\[scenario:(approved|conditional|rejected|pivot_out)\]/.exec(lastUser(request))?.[1];
    return proveAnswer((marked ?? 'approved') as Exclude<PipelineScenario, 'forge'>, request);
  };
}

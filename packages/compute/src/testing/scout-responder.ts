import type { ScriptedRequest } from '@repo/llm/testing';

/** A line of a prompt that lists something by index: `[3] (article) Title — ...`, `P2 Theme (...`, `T0 Title — ...`. */
interface Listed {
  index: number;
  kind: string;
  title: string;
  /** The rest of the line (points of a discussion, ...). */
  rest: string;
}

function lastUser(request: ScriptedRequest): string {
  return [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
}

function listedItems(user: string): Listed[] {
  const out: Listed[] = [];
  for (const m of user.matchAll(/^\[(\d+)\] \((article|discussion)\) (.*?)(?: — (.*))?$/gm)) {
    const title = (m[3] ?? '').split(' | ')[0] ?? '';
    out.push({ index: Number(m[1]), kind: m[2] ?? '', title, rest: m[0] });
  }
  return out;
}

function listed(user: string, prefix: 'P' | 'T' | 'C'): Listed[] {
  const out: Listed[] = [];
  for (const m of user.matchAll(new RegExp(`^${prefix}(\\d+) (.*?)(?: \\(| — |$)`, 'gm')))
    out.push({ index: Number(m[1]), kind: prefix, title: m[2] ?? '', rest: m[0] });
  return out;
}

function matching(entries: readonly Listed[], pattern: RegExp): number[] {
  return entries.filter((e) => pattern.test(e.title)).map((e) => e.index);
}

function points(entry: Listed): number {
  return Number(/, (\d+) points/.exec(entry.rest)?.[1] ?? 0);
}

/** Trends of the fixture themes, by the item titles they cite. */
const TREND_THEMES = [
  {
    title: 'AI coding agents go mainstream',
    pattern: /coding agents|agent frameworks|ai agents/i,
    description: 'Coding agents move from demos into daily engineering work.',
    insight: 'Teams need guard rails around agent-written code.',
  },
  {
    title: 'Invoice and payment automation',
    pattern: /invoice|bookkeeping/i,
    description: 'Money flowing into automating invoices, bookkeeping and reconciliation.',
    insight: 'Small businesses will pay to stop chasing and matching payments by hand.',
  },
  {
    title: 'Open source under AI pressure',
    pattern: /open source|pull request/i,
    description: 'Maintainers are swamped by machine-generated contributions.',
    insight: 'Triage tooling for maintainers is an open field.',
  },
];

const PAIN_THEMES = [
  {
    theme: 'Manual invoice reconciliation',
    severity: 'high',
    pattern: /reconcil/i,
    description: 'Matching invoices and payments across providers by hand takes days.',
  },
  {
    theme: 'Late payments',
    severity: 'medium',
    pattern: /late invoice|late payment/i,
    description: 'Clients pay weeks late and freelancers chase them.',
  },
  {
    theme: 'AI agents flood code review and CI',
    severity: 'critical',
    pattern: /pull request|code review|broke ci/i,
    description: 'Agent-written changes overwhelm reviewers and break builds.',
  },
  {
    theme: 'Flaky tests',
    severity: 'high',
    pattern: /flaky/i,
    description: 'Unreliable tests block merges.',
  },
] as const;

const CLUSTER_THEMES = [
  {
    theme: 'Getting paid and reconciling',
    pattern: /invoice|payment|reconcil/i,
    description: 'Getting paid on time and matching payments to invoices.',
  },
  {
    theme: 'Review and CI overload from AI agents',
    pattern: /code review|flaky|\bci\b/i,
    description: 'Reviews and builds cannot keep up with the volume of changes.',
  },
];

const GAP_THEMES = [
  {
    title: 'Reconciliation autopilot for small businesses',
    trend: /invoice|payment/i,
    cluster: /paid|reconcil|invoice/i,
  },
  {
    title: 'Review gatekeeper for AI-generated code',
    trend: /coding agents|agent/i,
    cluster: /review|\bci\b/i,
  },
];

function trends(user: string): unknown {
  const items = listedItems(user);
  const out = TREND_THEMES.map((t) => ({ ...t, itemIndexes: matching(items, t.pattern) }))
    .filter((t) => t.itemIndexes.length > 0)
    .map(({ title, description, insight, itemIndexes }) => ({ title, description, insight, itemIndexes }));
  if (out.length === 0 && items.length > 0)
    out.push({
      title: `Top stories: ${items[0]!.title.slice(0, 80)}`,
      description: 'The most recent stories of the sector.',
      insight: 'Worth watching.',
      itemIndexes: items.slice(0, 3).map((i) => i.index),
    });
  return { trends: out };
}

function pains(user: string): unknown {
  const items = listedItems(user);
  const out: { theme: string; severity: string; description: string; itemIndexes: number[] }[] =
    PAIN_THEMES.map((p) => ({
      theme: p.theme,
      severity: p.severity,
      description: p.description,
      itemIndexes: matching(items, p.pattern),
    })).filter((p) => p.itemIndexes.length > 0);
  if (out.length === 0) {
    const discussions = items.filter((i) => i.kind === 'discussion').sort((a, b) => points(b) - points(a));
    for (const d of (discussions.length ? discussions : items).slice(0, 3))
      out.push({
        theme: d.title.slice(0, 80),
        severity: 'medium',
        description: `Raised in: ${d.title}`,
        itemIndexes: [d.index],
      });
  }
  return { pains: out };
}

function clusters(user: string): unknown {
  const painList = listed(user, 'P');
  const out = CLUSTER_THEMES.map((c) => ({
    theme: c.theme,
    description: c.description,
    painIndexes: matching(painList, c.pattern),
  })).filter((c) => c.painIndexes.length > 0);
  if (out.length === 0 && painList.length > 0)
    out.push({
      theme: 'Recurring complaints',
      description: 'What users complain about most.',
      painIndexes: painList.map((p) => p.index),
    });
  return { clusters: out };
}

function gaps(user: string): unknown {
  const trendList = listed(user, 'T');
  const clusterList = listed(user, 'C');
  const out: { title: string; trendIndex: number; clusterIndexes: number[] }[] = [];
  for (const g of GAP_THEMES) {
    const trend = trendList.find((t) => g.trend.test(t.title));
    const clusterIndexes = matching(clusterList, g.cluster);
    if (trend && clusterIndexes.length > 0)
      out.push({ title: g.title, trendIndex: trend.index, clusterIndexes });
  }
  if (out.length === 0 && trendList[0] && clusterList[0])
    out.push({
      title: `Tooling for ${trendList[0].title.slice(0, 80)}`,
      trendIndex: trendList[0].index,
      clusterIndexes: [clusterList[0].index],
    });
  return { gaps: out };
}

function brief(user: string): unknown {
  const trendList = listed(user, 'T');
  const agentic = matching(trendList, /agent|open source/i);
  return {
    overview: `This scan found ${trendList.length} trends. Agents and automation dominate the sector's news and complaints.`,
    takeaway: 'Build the guard rails and the back office that automation still lacks.',
    narratives: [
      {
        title: 'Agents everywhere',
        summary: 'Agents write code and move money; the humans around them are the bottleneck.',
        trendIndexes: agentic.length ? agentic : trendList.slice(0, 2).map((t) => t.index),
      },
    ],
  };
}

/**
 * Answers the scout pipeline's LLM tasks (`scout_trends`, `scout_pains`, `scout_clusters`,
 * `scout_gaps`, `scout_brief`) from the prompt alone: items are cited when their titles match the
 * fixture themes (so {@link FIXTURE_SCAN}'s figures hold over the fixture feeds); over other items
 * (real feeds) it falls back to the first or most discussed items, one cluster and one gap.
 * @param request the scripted server's request
 * @returns the answer, or `undefined` for a task that is not a scout task
 */
export function scoutAnswer(request: ScriptedRequest): unknown {
  const user = lastUser(request);
  switch (request.task) {
    case 'scout_trends':
      return trends(user);
    case 'scout_pains':
      return pains(user);
    case 'scout_clusters':
      return clusters(user);
    case 'scout_gaps':
      return gaps(user);
    case 'scout_brief':
      return brief(user);
    default:
      return undefined;
  }
}

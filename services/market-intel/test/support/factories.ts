import type { ScanReport } from '@repo/schemas';

/** A valid scan report; `overrides` replace top-level fields. */
export function buildReport(overrides: Partial<ScanReport> = {}): ScanReport {
  const generatedAt = overrides.generatedAt ?? new Date().toISOString();
  const daysAgo = (d: number) => new Date(Date.parse(generatedAt) - d * 86_400_000).toISOString();
  return {
    generatedAt,
    sectors: [
      {
        sector: 'fintech',
        gaps: [
          {
            title: 'Reconciliation copilots',
            trend_signal: {
              article: 'Instant payments double',
              source: 'news-a',
              score: 0.9,
              insight: 'Batch is over',
            },
            pain_signals: [
              {
                theme: 'manual reconciliation',
                severity: 'high',
                signal_count: 12,
                description: 'Days of matching',
              },
            ],
          },
          {
            title: 'Stablecoin payroll',
            trend_signal: { article: 'USDC in B2B', source: 'news-b', score: 0.5, insight: 'No audit trail' },
            pain_signals: [
              { theme: 'tax', severity: 'critical', signal_count: 3, description: 'No exports' },
            ],
          },
        ],
        painClusters: [
          {
            theme: 'manual reconciliation',
            description: 'Matching by hand',
            mentions: 12,
            intensity: 'high',
          },
          { theme: 'tax', description: 'No exports', mentions: 3, intensity: 'critical' },
        ],
        trends: [
          {
            title: 'Instant payments',
            description: 'Volumes double',
            velocity: 'rising',
            source: 'news-a',
            date: daysAgo(1),
          },
          {
            title: 'Old news',
            description: 'Ten days ago',
            velocity: 'steady',
            source: 'news-c',
            date: daysAgo(10),
          },
        ],
        keywords: [
          { keyword: 'reconciliation', count: 20 },
          { keyword: 'stablecoin', count: 7 },
        ],
      },
      {
        sector: 'dev-tools',
        gaps: [
          {
            title: 'Flaky test triage',
            trend_signal: {
              article: 'CI retries',
              source: 'news-d',
              score: 0.7,
              insight: 'Nobody owns flakes',
            },
            pain_signals: [],
          },
        ],
        painClusters: [
          { theme: 'flaky tests', description: 'Retries hide failures', mentions: 30, intensity: 'high' },
        ],
        trends: [
          {
            title: 'Agents call APIs',
            description: 'More traffic',
            velocity: 'rising',
            source: 'news-d',
            date: daysAgo(2),
          },
        ],
        keywords: [
          { keyword: 'ci', count: 9 },
          { keyword: 'reconciliation', count: 1 },
        ],
      },
    ],
    brief: {
      date: generatedAt.slice(0, 10),
      overview: 'Payments go instant',
      takeaway: 'Reconciliation is the gap',
      stats: { articles: 10 },
      top_articles: [{ title: 'Instant payments double' }],
      sector_heatmap: { fintech: 0.9, 'dev-tools': 0.7 },
      narratives: [],
      cross_signals: [],
    },
    ...overrides,
  };
}

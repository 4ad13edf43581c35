import { randomUUID } from 'node:crypto';
import { SESSION_CONFIG_DEFAULTS, type SessionConfig } from '@repo/schemas';
import type { ForgeJobInput, ProveJobInput, ScoutSectorData } from '../results';

/**
 * Scout data for one sector, shaped like market-intel's latest scan.
 * @param sector the sector tag
 */
export function sampleScout(sector = 'health-tech'): ScoutSectorData {
  return {
    sector,
    generatedFrom: '2026-11-21T06:00:00.000Z',
    gaps: [
      {
        title: 'No-show prevention for small clinics',
        trend_signal: {
          article: 'Clinics adopt AI receptionists',
          source: 'example.org',
          score: 0.82,
          insight: 'AI voice agents got cheap',
        },
        pain_signals: [
          { theme: 'no-shows', severity: 'high', signal_count: 42, description: 'Empty chairs cost revenue' },
        ],
      },
    ],
    painClusters: [
      { theme: 'scheduling', description: 'Phone tag to book appointments', mentions: 57, intensity: 'high' },
    ],
    trends: [
      {
        title: 'AI receptionists',
        description: 'Voice agents answer clinic phones',
        velocity: 'rising',
        source: 'example.org',
      },
    ],
    keywords: [
      { keyword: 'no-show', count: 31 },
      { keyword: 'waitlist', count: 12 },
    ],
  };
}

/**
 * A valid prove job input (the default session_config unless overridden).
 * @param overrides fields to replace
 */
export function proveJobInput(
  overrides: Partial<ProveJobInput> & { session_config?: SessionConfig } = {},
): ProveJobInput {
  return {
    idea: 'An AI receptionist that fills cancelled dental appointments from a waitlist by text message.',
    session_config: { ...SESSION_CONFIG_DEFAULTS },
    proveSessionId: randomUUID(),
    ...overrides,
  };
}

/**
 * A valid forge job input with scout data for each sector (the default session_config unless overridden).
 * @param overrides fields to replace
 */
export function forgeJobInput(overrides: Partial<ForgeJobInput> = {}): ForgeJobInput {
  const sectors = overrides.sectors ?? ['health-tech'];
  return {
    sectors,
    context: 'Two ex-clinic-managers who can code; want recurring revenue.',
    product_modes: ['B2B SaaS'],
    session_config: { ...SESSION_CONFIG_DEFAULTS },
    scout: sectors.map((s) => sampleScout(s)),
    ...overrides,
  };
}

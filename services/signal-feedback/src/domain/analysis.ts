import type { Logger } from '@repo/service-kit';
import type { AnalysisCandidate, AnalysisRepository } from '../data/analysis';
import type { ProposalRepository } from '../data/proposals';
import type { Proposal } from '../schemas/proposals';
import {
  buildEvidence,
  evidenceHash,
  priorityScore,
  summarizeEvidence,
  textFromEvidence,
  WINDOW_MS,
  type ProposalText,
} from './evidence';
import type { ProposalWriter } from './proposal-writer';
import { monthKey, PLAN_LIMITS } from './plans';

/** Result of one analysis pass. */
export interface AnalysisResult {
  contextsAnalyzed: number;
  proposalsCreated: number;
  proposals: Proposal[];
}

/** Dependencies of {@link AnalysisService}. */
export interface AnalysisDeps {
  analysis: AnalysisRepository;
  proposals: ProposalRepository;
  /** Absent: proposals are written from the evidence. */
  writer?: ProposalWriter;
  logger: Logger;
  /** Minimum signals in the last 24 h (`ANALYSIS_MIN_SIGNALS`, README, "Configuration"). */
  minSignals: number;
  now?: () => Date;
  /** How long a claimed context stays leased to one replica, ms. */
  leaseMs?: number;
  /** Told about each stored proposal (metrics). */
  onProposal?: (source: 'llm' | 'evidence') => void;
}

/**
 * Turns signals into proposals (README, "Routing, classification and analysis"): for every context
 * with at least `minSignals` signals in the last 24 hours, builds the evidence, skips it when a proposal
 * with the same evidence hash exists or the plan's monthly proposal quota is used up, writes the prose
 * (LLM or evidence) and stores the proposal. Safe to run on every replica at once: each context is
 * leased with `FOR UPDATE SKIP LOCKED`, and the (context, evidence hash) uniqueness makes a duplicate
 * impossible.
 */
export class AnalysisService {
  /** @param deps repositories, writer, logger and thresholds */
  constructor(private readonly deps: AnalysisDeps) {}

  /**
   * One pass over the due contexts (all, or only the user's).
   * @param trigger recorded in `analysis_runs`
   */
  async runOnce(trigger: 'schedule' | 'user' | 'cli', userId?: string): Promise<AnalysisResult> {
    const now = this.deps.now?.() ?? new Date();
    const runId = await this.deps.analysis.startRun(trigger);
    const result: AnalysisResult = { contextsAnalyzed: 0, proposalsCreated: 0, proposals: [] };
    try {
      const candidates = await this.deps.analysis.candidates(
        new Date(now.getTime() - WINDOW_MS),
        this.deps.minSignals,
        userId,
      );
      for (const c of candidates) {
        const leaseUntil = new Date(now.getTime() + (this.deps.leaseMs ?? 5 * 60_000));
        if (!(await this.deps.analysis.claim(c.contextId, now, leaseUntil))) continue;
        let analyzed = false;
        try {
          const created = await this.analyzeContext(c, now);
          analyzed = true;
          result.contextsAnalyzed++;
          if (created) {
            result.proposalsCreated++;
            result.proposals.push(created);
          }
        } catch (err) {
          this.deps.logger.error({ err, contextId: c.contextId }, 'analysis of a context failed');
        } finally {
          await this.deps.analysis.release(c.contextId, analyzed ? now : null);
        }
      }
      await this.deps.analysis.finishRun(runId, {
        contextsAnalyzed: result.contextsAnalyzed,
        proposalsCreated: result.proposalsCreated,
      });
    } catch (err) {
      await this.deps.analysis
        .finishRun(runId, { ...result, error: err instanceof Error ? err.message : String(err) })
        .catch(() => undefined);
      throw err;
    }
    return result;
  }

  private async analyzeContext(c: AnalysisCandidate, now: Date): Promise<Proposal | undefined> {
    const from = new Date(now.getTime() - WINDOW_MS);
    const [current, previous] = await Promise.all([
      this.deps.analysis.windowStats(c.contextId, from, new Date(now.getTime() + 1)),
      this.deps.analysis.windowStats(c.contextId, new Date(from.getTime() - WINDOW_MS), from),
    ]);
    if (current.total < this.deps.minSignals) return undefined;
    const recurring = await this.deps.analysis.payloadValues(c.contextId, from, new Date(now.getTime() + 1));
    const evidence = buildEvidence(current, previous, recurring);
    const hash = evidenceHash(evidence);
    if (await this.deps.proposals.exists(c.contextId, hash)) return undefined;
    const month = monthKey(now);
    const limit = PLAN_LIMITS[c.plan].proposalsPerMonth;
    // Checked before asking the LLM (the insert re-checks atomically).
    if (limit !== null && (await this.deps.proposals.monthlyProposals(c.userId, month)) >= limit)
      return undefined;

    let text: ProposalText;
    let source: 'llm' | 'evidence' = 'evidence';
    if (this.deps.writer) {
      try {
        text = await this.deps.writer.write(c, evidence);
        source = 'llm';
      } catch (err) {
        this.deps.logger.warn(
          { err, contextId: c.contextId },
          'LLM proposal failed; writing it from the evidence',
        );
        text = textFromEvidence(c, evidence);
      }
    } else text = textFromEvidence(c, evidence);

    const outcome = await this.deps.proposals.insertWithinQuota(
      {
        productId: c.productId,
        contextId: c.contextId,
        priorityScore: priorityScore(evidence),
        diagnosis: text.diagnosis,
        currentState: text.current_state,
        proposedChange: text.proposed_change,
        evidenceSummary: summarizeEvidence(evidence),
        predictedImpact: text.predicted_impact,
        signalCount: evidence.signal_count,
        evidence: evidence as unknown as Record<string, unknown>,
        evidenceHash: hash,
        source,
      },
      { userId: c.userId, month, limit },
    );
    if (!('created' in outcome)) return undefined;
    this.deps.onProposal?.(source);
    return outcome.created;
  }
}

import type { LlmClient } from '@repo/llm';
import { z } from 'zod';
import type { Evidence, ProposalText } from './evidence';

/** The JSON object the LLM must answer with: the four prose fields of a proposal. */
export const LlmProposal = z.object({
  diagnosis: z.string().trim().min(1).max(2000),
  current_state: z.string().trim().min(1).max(4000),
  proposed_change: z.string().trim().min(1).max(4000),
  predicted_impact: z.string().trim().min(1).max(2000),
});

/** Writes a proposal's prose from a context and its evidence. */
export interface ProposalWriter {
  /**
   * @returns the four prose fields
   * @throws Error when the model fails or twice answers something that is not the expected JSON
   */
  write(context: { name: string; content: string }, evidence: Evidence): Promise<ProposalText>;
}

/** Task name of the completion: the JSON schema's name in the request. */
const TASK = 'signal_feedback_proposal';

const SYSTEM = [
  'You are a product analyst. From evidence about user signals in one product area, write one improvement proposal.',
  'Answer with a single JSON object and nothing else, with exactly these string fields:',
  '"diagnosis" (one or two sentences: what is going wrong and why, citing the numbers),',
  '"current_state" (several lines describing how the area behaves today, per the evidence),',
  '"proposed_change" (one concrete change to make), "predicted_impact" (the expected effect, with numbers where possible).',
  'Use only the evidence given; do not invent data.',
].join(' ');

/**
 * A {@link ProposalWriter} over an `@repo/llm` client (README, "Routing, classification and analysis"):
 * one structured-output completion of {@link LlmProposal} at temperature 0.2; the client validates the
 * answer and asks for a repair as often as it was built to (signal-feedback builds it with one repair
 * turn).
 */
export class LlmProposalWriter implements ProposalWriter {
  /** @param llm the client of the configured endpoint and model */
  constructor(private readonly llm: Pick<LlmClient, 'complete'>) {}

  /**
   * @throws the `@repo/llm` errors: `LlmOutputError` when the answer stayed invalid after the repair
   *   turn, `LlmUnavailableError`, `LlmConfigError` or `LlmRequestError` when the request failed
   */
  async write(context: { name: string; content: string }, evidence: Evidence): Promise<ProposalText> {
    const { value } = await this.llm.complete({
      task: TASK,
      system: SYSTEM,
      user: JSON.stringify({ context: { name: context.name, description: context.content }, evidence }),
      schema: LlmProposal,
      temperature: 0.2,
    });
    return value;
  }
}

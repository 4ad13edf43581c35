import OpenAI from 'openai';
import { z } from 'zod';
import type { LlmSettings } from '../config';
import type { Evidence, ProposalText } from './evidence';

/** The JSON object the LLM must answer with. */
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

const SYSTEM = [
  'You are a product analyst. From evidence about user signals in one product area, write one improvement proposal.',
  'Answer with a single JSON object and nothing else, with exactly these string fields:',
  '"diagnosis" (one or two sentences: what is going wrong and why, citing the numbers),',
  '"current_state" (several lines describing how the area behaves today, per the evidence),',
  '"proposed_change" (one concrete change to make), "predicted_impact" (the expected effect, with numbers where possible).',
  'Use only the evidence given; do not invent data.',
].join(' ');

/**
 * A {@link ProposalWriter} over any OpenAI-compatible Chat Completions endpoint (official `openai` SDK):
 * JSON mode, output validated with zod, one repair request when the answer does not validate.
 */
export class OpenAiProposalWriter implements ProposalWriter {
  private readonly client: OpenAI;

  /** @param settings base URL, key, model and per-request timeout (ms) */
  constructor(private readonly settings: LlmSettings) {
    this.client = new OpenAI({
      baseURL: settings.baseUrl,
      apiKey: settings.apiKey,
      timeout: settings.timeoutMs,
      maxRetries: 1,
    });
  }

  async write(context: { name: string; content: string }, evidence: Evidence): Promise<ProposalText> {
    const messages: OpenAI.Chat.Completions.ChatCompletionMessageParam[] = [
      { role: 'system', content: SYSTEM },
      {
        role: 'user',
        content: JSON.stringify({ context: { name: context.name, description: context.content }, evidence }),
      },
    ];
    let lastError = '';
    for (let attempt = 0; attempt < 2; attempt++) {
      const completion = await this.client.chat.completions.create({
        model: this.settings.model,
        messages,
        temperature: 0.2,
        response_format: { type: 'json_object' },
      });
      const content = completion.choices[0]?.message.content ?? '';
      const parsed = parseJson(content);
      const result = LlmProposal.safeParse(parsed);
      if (result.success) return result.data;
      lastError =
        parsed === undefined
          ? 'not valid JSON'
          : result.error.issues.map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`).join('; ');
      messages.push(
        { role: 'assistant', content },
        {
          role: 'user',
          content: `That answer is invalid (${lastError}). Reply with only the JSON object with the four string fields.`,
        },
      );
    }
    throw new Error(`LLM answer invalid after one repair: ${lastError}`);
  }
}

/** Parses JSON, tolerating a Markdown code fence around it; undefined when it is not JSON. */
function parseJson(text: string): unknown {
  const fenced = /```(?:json)?\s*([\s\S]*?)```/.exec(text);
  try {
    return JSON.parse((fenced?.[1] ?? text).trim());
  } catch {
    return undefined;
  }
}

import { z } from 'zod';
import type { SessionConfig } from '@repo/schemas';

/**
 * Cuts text to at most `max` characters at a word boundary, with an ellipsis.
 * @param text the text @param max the maximum length in characters
 */
export function clip(text: string, max: number): string {
  const flat = text.trim();
  if (flat.length <= max) return flat;
  const cut = flat.slice(0, max - 1);
  const space = cut.lastIndexOf(' ');
  return `${space > max / 2 ? cut.slice(0, space) : cut}…`;
}

/**
 * The session_config as prompt lines.
 * @param config the resolved session_config
 */
export function describeSessionConfig(config: SessionConfig): string {
  return [
    `Founder profile: ${config.profile}`,
    `Budget: ${config.budget}`,
    `Timeline: ${config.timeline}`,
    `Revenue threshold: ${config.revenue_threshold}`,
    ...(config.founder_signal ? [`Founder signal: ${clip(config.founder_signal, 2000)}`] : []),
  ].join('\n');
}

/** Today's date as YYYY-MM-DD (prompts ground "why now" in it). */
export function isoDate(now: Date): string {
  return now.toISOString().slice(0, 10);
}

/**
 * An array the model should keep short: at least `min` items are required, extra items beyond `max`
 * are dropped instead of failing validation (a repair turn costs more than the surplus is worth).
 * @param item the element schema @param max items kept @param min items required (default 0)
 */
export function upTo<T extends z.ZodType>(item: T, max: number, min = 0) {
  return z
    .array(item)
    .min(min)
    .describe(min > 0 ? `${min} to ${max} items` : `at most ${max} items`)
    .transform((items) => items.slice(0, max));
}

/**
 * A whole number the model may give with decimals: rounded, then bounded.
 * @param min lower bound @param max upper bound
 */
export function roundedInt(min: number, max: number) {
  return z
    .number()
    .min(min)
    .max(max)
    .transform((n) => Math.round(n));
}

/** The two messages of one LLM turn: the system prompt and the user prompt. */
export interface Prompt {
  system: string;
  user: string;
}

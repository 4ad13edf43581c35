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

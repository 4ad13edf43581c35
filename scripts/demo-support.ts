// What every part of the agent demo (scripts/demo.ts) prints with, and the services it talks to
// (MARKET_INTEL_URL, LEDGER_URL, SIGNAL_FEEDBACK_URL, SIGNAL_FEEDBACK_DATABASE_URL, SKILL_ROUTER_URL;
// the local defaults otherwise, those of scripts/stack.ts).

const env = process.env;
/** market-intel's base URL. */
export const BASE = (env.MARKET_INTEL_URL ?? 'http://127.0.0.1:3001').replace(/\/+$/, '');
/** The local ledger's URL. */
export const LEDGER_URL = env.LEDGER_URL ?? 'http://127.0.0.1:8899';
/** signal-feedback's base URL. */
export const SIGNAL_FEEDBACK_URL = (env.SIGNAL_FEEDBACK_URL ?? 'http://127.0.0.1:3002').replace(/\/+$/, '');
/** signal-feedback's database, which the stack migrates and starts it on: the demo imports history there. */
export const SIGNAL_FEEDBACK_DATABASE_URL =
  env.SIGNAL_FEEDBACK_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/signal_feedback';
/** skill-router's base URL. */
export const SKILL_ROUTER_URL = (env.SKILL_ROUTER_URL ?? 'http://127.0.0.1:3003').replace(/\/+$/, '');

/** Prints a titled HTTP answer: its status, the paying transaction if any, and its body (clipped to 24 lines). */
export function show(title: string, status: number, body: unknown, signature?: string): void {
  const text = JSON.stringify(body, null, 2);
  const lines = text.split('\n');
  const clipped =
    lines.length > 24 ? [...lines.slice(0, 24), `  ... (${lines.length - 24} more lines)`] : lines;
  process.stdout.write(
    `\n\x1b[1m${title}\x1b[0m -> HTTP ${status}${signature ? `\n  paid with transaction ${signature}` : ''}\n${clipped.join('\n')}\n`,
  );
}

/** Prints a section heading. */
export function section(title: string): void {
  process.stdout.write(`\n\x1b[1;35m=== ${title} ===\x1b[0m\n`);
}

/** Prints a bold title and its indented lines. */
export function note(title: string, lines: string[]): void {
  process.stdout.write(`\n\x1b[1m${title}\x1b[0m\n${lines.map((line) => `  ${line}`).join('\n')}\n`);
}

/** A body as JSON when it is JSON, else as text; of a 402, only why (its `accepts` are the offer again). */
export function parsed(text: string): unknown {
  try {
    const body = JSON.parse(text) as unknown;
    if (typeof body !== 'object' || body === null || !('accepts' in body)) return body;
    const { error, code, details } = body as { error?: unknown; code?: unknown; details?: unknown };
    return { error, code, details };
  } catch {
    return text;
  }
}

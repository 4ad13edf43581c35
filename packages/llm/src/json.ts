import type { z } from 'zod';

/** Result of {@link parseModelJson}. */
export type ParsedJson = { ok: true; value: unknown } | { ok: false; error: string };

/**
 * Parses a model's answer as JSON, tolerating what models commonly wrap around it: a Markdown code
 * fence (```json ... ```), and prose before or after a single top-level object or array.
 * @param text the message content
 */
export function parseModelJson(text: string): ParsedJson {
  const trimmed = text.trim();
  if (!trimmed) return { ok: false, error: 'the answer was empty' };
  const candidates = [trimmed];
  const fence = /```[a-zA-Z0-9_-]*\s*\n?([\s\S]*?)```/.exec(trimmed);
  if (fence?.[1]) candidates.push(fence[1].trim());
  const start = trimmed.search(/[[{]/);
  const end = Math.max(trimmed.lastIndexOf('}'), trimmed.lastIndexOf(']'));
  if (start >= 0 && end > start) candidates.push(trimmed.slice(start, end + 1));
  let firstError = '';
  for (const candidate of candidates) {
    try {
      return { ok: true, value: JSON.parse(candidate) as unknown };
    } catch (error) {
      firstError ||= (error as Error).message;
    }
  }
  return { ok: false, error: `the answer is not JSON (${firstError})` };
}

/**
 * Renders zod issues as short lines for a repair prompt and for error messages, e.g.
 * `votes.2.vote: Invalid option: expected one of "APPROVE"|"CONDITIONAL"|"REJECT"`.
 * @param error the zod error
 */
export function describeIssues(error: z.ZodError): string[] {
  return error.issues.map(
    (issue) => `${issue.path.length ? issue.path.join('.') : '(root)'}: ${issue.message}`,
  );
}

/**
 * The `response_format.json_schema.name` for a task: characters outside `[a-zA-Z0-9_-]` become `_`,
 * at most 64 characters (the Chat Completions limit), never empty.
 * @param task the task name
 */
export function schemaNameFor(task: string): string {
  const name = task.replace(/[^a-zA-Z0-9_-]/g, '_').slice(0, 64);
  return name || 'response';
}

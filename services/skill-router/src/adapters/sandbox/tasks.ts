import type { Generated, Verdict } from '../../domain/verification';

/**
 * The messages between the schema sandbox and its worker threads (structured-cloned, so plain data).
 * Everything a task carries comes from a registrant or a skill's reply.
 */

/** One unit of untrusted work (README, "Security", its "Sandboxed verification" item). */
export type SandboxTask =
  /** Validate and compile a registrant's JSON Schema. */
  | { kind: 'check_schema'; schema: unknown }
  /** Generate a test input valid against `inputSchema`. */
  | { kind: 'generate_input'; inputSchema: unknown }
  /** Parse a skill's reply `body` (text) and validate it against `outputSchema`. */
  | { kind: 'check_reply'; outputSchema: unknown; body: string };

/** The kind of a {@link SandboxTask}, used as a metric label. */
export type SandboxTaskKind = SandboxTask['kind'];

/** What each task kind answers. */
export interface SandboxAnswers {
  check_schema: Verdict;
  generate_input: Generated;
  check_reply: Verdict;
}

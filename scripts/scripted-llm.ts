// An offline stand-in for an LLM, to try the compute flow on a machine without one (no internet, no
// Ollama): the scripted OpenAI-compatible server the tests use, answering every pipeline task so that
// a debate reaches the verdict named in its idea (`[scenario:rejected]`, ...; default APPROVED).
// Development only: start the stack with LLM_BASE_URL pointing here (see README, "LLM").
import { startScriptedLlm } from '@repo/llm/testing';
import { scriptedPipelineResponder } from '@repo/compute/testing';

const port = Number(process.env.SCRIPTED_LLM_PORT ?? 11435);
/** Milliseconds each answer is delayed, so progress is visible (default 300). */
const delayMs = Number(process.env.SCRIPTED_LLM_DELAY_MS ?? 300);

async function main(): Promise<void> {
  const llm = await startScriptedLlm({ respond: scriptedPipelineResponder(), port });
  llm.setDelay(delayMs);
  process.stdout.write(
    `scripted LLM (offline stand-in, not a model) at ${llm.baseUrl}, model "scripted-model", ${delayMs} ms per answer\n` +
      `start the stack with: LLM_BASE_URL=${llm.baseUrl} LLM_MODEL=scripted-model pnpm start\n`,
  );
  const stop = (): void => void llm.close().then(() => process.exit(0));
  process.on('SIGINT', stop);
  process.on('SIGTERM', stop);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});

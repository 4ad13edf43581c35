/**
 * Runs one pipeline locally, step by step, against the configured LLM and search provider — without
 * RabbitMQ or market-intel — printing each step's progress and the result as JSON. For checking an
 * LLM configuration (model, prompts, structured output) before starting the stack.
 *
 *   LLM_BASE_URL=http://127.0.0.1:11434/v1 LLM_MODEL=llama3.1:8b \
 *     pnpm --filter @repo/pipeline-runner run-pipeline prove "An AI receptionist for dental clinics"
 *   pnpm --filter @repo/pipeline-runner run-pipeline forge fintech dev-tools
 *   pnpm --filter @repo/pipeline-runner run-pipeline scout ../market-intel/config/scout-sources.json fintech
 *
 * Reads the runner's configuration (LLM_*, SEARCH_PROVIDER, SEARXNG_URL, TAVILY_API_KEY). The
 * session_config is `SESSION_CONFIG_DEFAULTS` of @repo/schemas (packages/schemas/src/session-config.ts)
 * unless SESSION_CONFIG holds its string form ("Profile: Solo\nBudget: $5K"). Forge runs without scout
 * data (market-intel sends it in production).
 * Scout fetches the sector's sources from a sources file (SCOUT_* settings) and analyses every item
 * it kept (market-intel would analyse its stored window of WINDOW_DAYS, default 7).
 * Exit code 0 on a result, 1 on a failure, 2 on bad arguments.
 */
import { randomUUID } from 'node:crypto';
import { createLlmClient, createSearxngProvider, createTavilyProvider } from '@repo/llm';
import { readFileSync } from 'node:fs';
import { SessionConfigInput } from '@repo/schemas';
import { ScoutSourcesFile, type ScoutJobInput } from '@repo/compute';
import { createLogger } from '@repo/service-kit';
import { loadConfig, scoutFetchSettings } from '../../config';
import { pipelines, type Pipeline, type PipelineDeps } from '../../domain/pipelines';

async function run<I, S, R>(pipeline: Pipeline<I, S, R>, rawInput: unknown, deps: PipelineDeps): Promise<R> {
  const input = pipeline.input.parse(rawInput);
  let state = pipeline.init(input);
  for (let step = 0; ; step += 1) {
    const started = Date.now();
    const outcome = await pipeline.step(input, state, deps);
    const seconds = ((Date.now() - started) / 1000).toFixed(1);
    if (outcome.kind === 'done') {
      process.stderr.write(`[100%] step ${step} ${outcome.label} (${seconds} s)\n`);
      return outcome.result;
    }
    process.stderr.write(
      `[${String(outcome.progressPct).padStart(3)}%] step ${step} ${outcome.label} (${seconds} s)\n`,
    );
    state = pipeline.state.parse(JSON.parse(JSON.stringify(outcome.state)));
  }
}

async function main(): Promise<number> {
  const [kind, ...rest] = process.argv.slice(2);
  if (
    (kind !== 'prove' && kind !== 'forge' && kind !== 'scout') ||
    (kind === 'prove' && rest.join(' ').trim().length < 10) ||
    (kind === 'scout' && rest.length !== 2)
  ) {
    process.stderr.write(
      'usage: run-pipeline prove "<idea, at least 10 characters>" | run-pipeline forge [sector ...] | run-pipeline scout <sources.json> <sector>\n',
    );
    return 2;
  }
  let scoutInput: ScoutJobInput | null = null;
  if (kind === 'scout') {
    const [file, sector] = rest as [string, string];
    const parsed = ScoutSourcesFile.safeParse(JSON.parse(readFileSync(file, 'utf8')));
    if (!parsed.success) {
      process.stderr.write(
        `${file}: ${parsed.error.issues.map((i) => `${i.path.join('.')}: ${i.message}`).join('; ')}\n`,
      );
      return 2;
    }
    const entry = parsed.data.sectors.find((s) => s.sector === sector);
    if (!entry) {
      process.stderr.write(
        `${file} has no sector "${sector}" (${parsed.data.sectors.map((s) => s.sector).join(', ')})\n`,
      );
      return 2;
    }
    scoutInput = { sector, sources: entry.sources, validators: {}, windowDays: 7, peers: [] };
  }
  const config = loadConfig();
  if (!config.LLM_BASE_URL || !config.LLM_MODEL) {
    process.stderr.write('set LLM_BASE_URL and LLM_MODEL (see README, "LLM and search")\n');
    return 2;
  }
  const sessionConfig = SessionConfigInput.safeParse(process.env.SESSION_CONFIG || undefined);
  if (!sessionConfig.success) {
    process.stderr.write(`SESSION_CONFIG: ${sessionConfig.error.issues.map((i) => i.message).join('; ')}\n`);
    return 2;
  }
  const llm = createLlmClient({
    baseUrl: config.LLM_BASE_URL,
    model: config.LLM_MODEL,
    timeoutMs: config.LLM_TIMEOUT_MS,
    ...(config.LLM_API_KEY ? { apiKey: config.LLM_API_KEY } : {}),
  });
  const probe = await llm.probe();
  if (!probe.ok) {
    process.stderr.write(`LLM probe failed (${probe.errorClass}): ${probe.error}\n`);
    return 1;
  }
  const search =
    config.SEARCH_PROVIDER === 'searxng' && config.SEARXNG_URL
      ? createSearxngProvider({ baseUrl: config.SEARXNG_URL })
      : config.SEARCH_PROVIDER === 'tavily' && config.TAVILY_API_KEY
        ? createTavilyProvider({ apiKey: config.TAVILY_API_KEY })
        : null;
  const deps: PipelineDeps = {
    llm,
    search,
    logger: createLogger({ name: 'run-pipeline', level: config.LOG_LEVEL }),
    now: () => new Date(),
    scout: scoutFetchSettings(config),
  };
  const result = scoutInput
    ? await run(pipelines.scout, scoutInput, deps)
    : kind === 'prove'
      ? await run(
          pipelines.prove,
          { idea: rest.join(' '), session_config: sessionConfig.data, proveSessionId: randomUUID() },
          deps,
        )
      : await run(
          pipelines.forge,
          { sectors: rest, context: null, product_modes: [], session_config: sessionConfig.data, scout: [] },
          deps,
        );
  process.stdout.write(`${JSON.stringify(result, null, 2)}\n`);
  return 0;
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    process.stderr.write(`${error instanceof Error ? error.message : String(error)}\n`);
    process.exit(1);
  },
);

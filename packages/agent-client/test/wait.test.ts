// agent-pay --wait against the real stack, as scripts/demo.ts runs a debate: market-intel and the
// pipeline-runner in their own processes (started from their directories, as their containers run
// them), PostgreSQL, RabbitMQ, the local ledger, and the scripted OpenAI-compatible server standing in
// for the LLM. The agent pays 25 USDC for a debate and follows it to its verdict.
import { join } from 'node:path';
import { applyMigrations, resetDatabase } from '@repo/db-migrate';
import { scriptedPipelineResponder } from '@repo/compute/testing';
import { startScriptedLlm, type ScriptedLlm } from '@repo/llm/testing';
import { resetVhost } from '@repo/queue/testing';
import { runScoped, spawnService, waitFor, type ServiceProcess } from '@repo/service-kit/testing';
import { spawnLocalnet, type Localnet } from '@repo/solana-localnet';
import { EXIT, runAgentPay } from '../src/index';

jest.setTimeout(180_000);

const ROOT = join(__dirname, '..', '..', '..');
let localnet: Localnet;
let llm: ScriptedLlm;
let marketIntel: ServiceProcess;
let runner: ServiceProcess;

beforeAll(async () => {
  const databaseUrl = `postgresql://postgres@127.0.0.1:5432/${runScoped('agent_client_wait_test')}`;
  await resetDatabase(databaseUrl);
  await applyMigrations({
    databaseUrl,
    migrationsDir: join(ROOT, 'services/market-intel/prisma/migrations'),
    log: { info: () => undefined, warn: () => undefined },
  });
  const amqpUrl = await resetVhost(runScoped('agent_client_wait_test'));
  localnet = await spawnLocalnet({ port: 0 });
  llm = await startScriptedLlm({ respond: scriptedPipelineResponder('approved') });
  [marketIntel, runner] = await Promise.all([
    spawnService({
      cwd: join(ROOT, 'services/market-intel'),
      env: {
        DATABASE_URL: databaseUrl,
        AMQP_URL: amqpUrl,
        SOLANA_RPC_URL: localnet.networks.solana.rpcUrl,
        USDC_MINT: localnet.networks.solana.mint,
        MERCHANT_TOKEN_ACCOUNT: localnet.networks.solana.merchantTokenAccount,
        LOG_LEVEL: 'warn',
        INSTANCE_ID: 'agent-pay-wait',
      },
      startTimeoutMs: 120_000,
    }),
    spawnService({
      cwd: join(ROOT, 'services/pipeline-runner'),
      env: {
        AMQP_URL: amqpUrl,
        LLM_BASE_URL: llm.baseUrl,
        LLM_MODEL: 'scripted-model',
        LLM_API_KEY: 'test',
        LOG_LEVEL: 'warn',
        HEARTBEAT_INTERVAL_MS: '500',
        RUNNER_ID: 'agent-pay-wait-runner',
      },
      startTimeoutMs: 120_000,
    }),
  ]);
  // The compute preflight asks for no payment until a healthy runner has been heard.
  await waitFor(
    'a healthy runner',
    async () => (await fetch(`${marketIntel.baseUrl}/api/v1/health`)).status === 200,
    60_000,
    200,
  );
});

afterAll(async () => {
  await Promise.all([marketIntel?.stop(), runner?.stop()]);
  await llm?.close();
  await localnet?.close();
});

describe('agent-pay --wait', () => {
  it('When a debate is paid with --wait, then progress lines follow the job and the verdict is printed, exit 0', async () => {
    let stdout = '';
    let stderr = '';
    const code = await runAgentPay(
      [
        `${marketIntel.baseUrl}/api/v1/prove/debate`,
        '--data',
        JSON.stringify({ idea: 'Receipts for agent payments, reconciled automatically' }),
        '--max-amount',
        '25',
        '--keypair',
        localnet.agent.keypairPath,
        '--rpc',
        localnet.networks.solana.rpcUrl,
        '--wait',
      ],
      { stdout: (t) => (stdout += t), stderr: (t) => (stderr += t), env: {}, cwd: ROOT },
    );
    expect({ code, stderr: stderr.split('\n').filter((l) => l.startsWith('agent-pay')) }).toEqual({
      code: EXIT.ok,
      stderr: [],
    });
    expect(stdout).toContain('HTTP 202');
    expect(stdout).toMatch(/^paid 25\.00 USDC on solana, /m);
    const jobId = /"jobId": "([^"]+)"/.exec(stdout)?.[1];
    expect(jobId).toBeDefined();
    // Not a TTY: one plain line per change, ending with the completed job.
    const progress = stderr.trim().split('\n');
    expect(progress.length).toBeGreaterThanOrEqual(2);
    for (const line of progress)
      expect(line).toMatch(new RegExp(`^job ${jobId} (pending|running|completed) \\d+ % after \\d+ s$`));
    expect(progress.at(-1)).toMatch(/ completed 100 % /);
    expect(stdout).toMatch(new RegExp(`^job ${jobId} completed after \\d+ s$`, 'm'));
    expect(stdout).toMatch(/^verdict APPROVED$/m);

    // The job the service holds is the one printed.
    const job = (await (await fetch(`${marketIntel.baseUrl}/api/v1/jobs/${jobId}`)).json()) as {
      status: string;
      result: { verdict: string };
    };
    expect(job).toMatchObject({ status: 'completed', result: { verdict: 'APPROVED' } });
  });

  it('When --json is given too, then the one JSON object carries the payment and the completed job with its verdict', async () => {
    let stdout = '';
    const code = await runAgentPay(
      [
        `${marketIntel.baseUrl}/api/v1/prove/debate`,
        '--data',
        JSON.stringify({ idea: 'A reconciliation copilot for small finance teams' }),
        '--max-amount',
        '25',
        '--keypair',
        localnet.agent.keypairPath,
        '--rpc',
        localnet.networks.solana.rpcUrl,
        '--wait',
        '--json',
      ],
      { stdout: (t) => (stdout += t), stderr: () => undefined, env: {}, cwd: ROOT },
    );
    expect(code).toBe(EXIT.ok);
    const out = JSON.parse(stdout) as { body: { jobId: string }; job: { jobId: string } };
    expect(out).toMatchObject({
      ok: true,
      status: 202,
      payment: { amount: '25.00', amountAtomic: '25000000', network: 'solana' },
      job: { jobId: out.body.jobId, status: 'completed', result: { verdict: 'APPROVED' } },
    });
  });
});

import { execFile } from 'node:child_process';
import {
  existsSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  renameSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Connection, PublicKey } from '@solana/web3.js';
import { startContractServer, type ContractServer } from './support/contract-server';

// The package as a new user gets it: `pnpm pack`, the tarball installed with npm in an empty directory
// outside the workspace (its dependencies from the registry), then used from ESM, from CommonJS and
// from TypeScript against the contract server and the local ledger.
jest.setTimeout(240_000);

const run = promisify(execFile);
const packageDir = join(__dirname, '..');
const publishName = (
  JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8')) as { publishName: string }
).publishName;
const tsc = require.resolve('typescript/bin/tsc');

let server: ContractServer;
let dir: string;
let tarball: string;

async function merchantUsdc(): Promise<bigint> {
  const net = server.localnet.networks.solana;
  const balance = await new Connection(net.rpcUrl, 'confirmed').getTokenAccountBalance(
    new PublicKey(net.merchantTokenAccount),
  );
  return BigInt(balance.value.amount);
}

async function node(file: string): Promise<Record<string, unknown>> {
  const { stdout } = await run(process.execPath, [file], {
    cwd: dir,
    env: { ...process.env, NODE_OPTIONS: '' },
  });
  return JSON.parse(stdout) as Record<string, unknown>;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'api-client-consumer-'));
  const packDir = mkdtempSync(join(tmpdir(), 'api-client-pack-'));
  [server] = await Promise.all([
    startContractServer(),
    run('pnpm', ['pack', '--pack-destination', packDir], { cwd: packageDir }),
  ]);
  tarball = join(
    packDir,
    readdirSync(packDir).find((f) => f.endsWith('.tgz'))!,
  );
  writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: 'consumer', private: true }));
  await run('npm', ['install', '--no-audit', '--no-fund', '--prefer-offline', tarball, '@types/node@20'], {
    cwd: dir,
    env: { ...process.env, npm_config_workspaces: '' },
  });
});

afterAll(async () => {
  // A pack that died between prepack and postpack leaves the published manifest in place: put it back.
  const saved = join(packageDir, '.package.json.workspace');
  if (existsSync(saved)) renameSync(saved, join(packageDir, 'package.json'));
  await server?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('The packed package', () => {
  it('When its manifest is read, then it is publishable: no private flag, no workspace dependency, no internal package', () => {
    const manifest = JSON.parse(
      readFileSync(join(dir, 'node_modules', ...publishName.split('/'), 'package.json'), 'utf8'),
    ) as Record<string, unknown> & { dependencies: Record<string, string> };
    expect(manifest.name).toBe(publishName);
    expect(manifest.private).toBeUndefined();
    expect(JSON.stringify(manifest)).not.toMatch(/workspace:|catalog:|@repo\//);
    expect(Object.values(manifest.dependencies).every((v) => /^\d+\.\d+\.\d+$/.test(v))).toBe(true);
    // The workspace manifest is back in place after packing.
    expect(JSON.parse(readFileSync(join(packageDir, 'package.json'), 'utf8'))).toMatchObject({
      name: '@repo/api-client',
    });
  });

  it('When an ES module imports it, then a free call and a paid call (official scheme) work and the merchant is paid once', async () => {
    writeFileSync(
      join(dir, 'consumer.mjs'),
      `import { marketIntelClient, receiptOf } from '${publishName}';
const free = marketIntelClient(${JSON.stringify(server.baseUrl)});
const sectors = await free.GET('/api/v1/sectors');
const paid = marketIntelClient(${JSON.stringify(server.baseUrl)}, {
  signer: ${JSON.stringify(server.localnet.agent.keypairPath)},
  rpcUrls: { solana: ${JSON.stringify(server.localnet.networks.solana.rpcUrl)} },
  limits: { maxPerPayment: '0.10', maxPerDay: '1' },
});
const keywords = await paid.GET('/api/v1/scout/keywords', { params: { query: { limit: 5 } } });
console.log(JSON.stringify({ sectors: sectors.data, status: keywords.response.status, keywords: keywords.data, receipt: receiptOf(keywords.response) }));
`,
    );
    const before = await merchantUsdc();
    const out = await node('consumer.mjs');
    expect(out).toMatchObject({
      sectors: { total_reports: 1 },
      status: 200,
      keywords: { keywords: [{ keyword: 'x402', count: 3 }] },
      receipt: {
        scheme: 'official',
        amountUsdc: '0.05',
        amountAtomic: '50000',
        payer: server.localnet.agent.publicKey,
      },
    });
    expect((await merchantUsdc()) - before).toBe(50_000n);
  });

  it('When CommonJS requires it, then a paid call in push mode and waitForJob work', async () => {
    const jobId = 'job_cjs_consumer';
    server.jobs.set(jobId, {
      jobId,
      endpoint: 'POST /api/v1/prove/debate',
      status: 'completed',
      progressPct: 100,
      result: { verdict: 'APPROVED' },
      error: null,
      createdAt: '2026-11-28T17:00:00.000Z',
      completedAt: '2026-11-28T18:00:00.000Z',
      txHash: '5'.repeat(88),
      refund: null,
    });
    writeFileSync(
      join(dir, 'consumer.cjs'),
      `const { marketIntelClient, waitForJob } = require('${publishName}');
const { Keypair } = require('@solana/web3.js');
const { readFileSync } = require('node:fs');
(async () => {
  const keypair = Keypair.fromSecretKey(Uint8Array.from(JSON.parse(readFileSync(${JSON.stringify(server.localnet.agent.keypairPath)}, 'utf8'))));
  const client = marketIntelClient(${JSON.stringify(server.baseUrl)}, { signer: keypair, mode: 'push', rpcUrls: { solana: ${JSON.stringify(server.localnet.networks.solana.rpcUrl)} } });
  const keywords = await client.GET('/api/v1/scout/keywords');
  const outcome = await waitForJob('${jobId}', { baseUrl: ${JSON.stringify(server.baseUrl)} });
  console.log(JSON.stringify({ status: keywords.response.status, count: keywords.data.count, outcome: outcome.status, verdict: outcome.result.verdict }));
})().catch((error) => { console.error(error); process.exit(1); });
`,
    );
    const before = await merchantUsdc();
    expect(await node('consumer.cjs')).toEqual({
      status: 200,
      count: 1,
      outcome: 'completed',
      verdict: 'APPROVED',
    });
    expect((await merchantUsdc()) - before).toBe(50_000n);
  });

  it('When a strict TypeScript project uses it, then its declarations type-check, and a path the service does not serve does not compile', async () => {
    writeFileSync(
      join(dir, 'tsconfig.json'),
      JSON.stringify({
        compilerOptions: {
          target: 'ES2022',
          module: 'NodeNext',
          moduleResolution: 'NodeNext',
          strict: true,
          noUncheckedIndexedAccess: true,
          exactOptionalPropertyTypes: true,
          noEmit: true,
          types: ['node'],
        },
        files: ['consumer.ts'],
      }),
    );
    writeFileSync(
      join(dir, 'consumer.ts'),
      `import {
  createPayer,
  marketIntelClient,
  payingMcpClient,
  receiptOf,
  SpendLimitExceededError,
  toolPrice,
  verifyWebhook,
  waitForJob,
  type JobOutcome,
  type PaidToolResult,
  type PaymentReceipt,
} from '${publishName}';

// Any client with the MCP SDK's callTool (the SDK is an optional peer, not installed here).
const mcp = { callTool: async (params: { name: string }) => ({ isError: params.name === '', structuredContent: { n: 1 } }) };

export async function main(): Promise<number> {
  const payer = createPayer({ signer: '/path/to/keypair.json', rpcUrls: { solana: 'http://127.0.0.1:8899' }, limits: { maxPerHour: '1', maxPerPayment: 200_000n } });
  const client = marketIntelClient('http://127.0.0.1:1', payer);
  const paid = await client.GET('/api/v1/scout/gaps', { params: { query: { sector: 'fintech', limit: 5 } } });
  const receipt: PaymentReceipt | undefined = receiptOf(paid.response);
  const gapTitles: string[] = paid.data?.gaps.map((gap) => gap.title) ?? [];
  if (receipt && receipt.amountAtomic !== '0' && gapTitles.length > 0 && !(paid.error instanceof SpendLimitExceededError)) return 1;
  const { data } = await client.GET('/api/v1/sectors');
  const total: number = data?.total_reports ?? 0;
  const outcome: JobOutcome = await waitForJob('job_1', { baseUrl: 'http://127.0.0.1:1', timeoutMs: 1 });
  const verdict = outcome.status === 'completed' ? outcome.result['verdict'] : outcome.failure.code;
  verifyWebhook({ secret: 's', headers: {}, body: '' });
  const tool: PaidToolResult<{ isError: boolean; structuredContent: { n: number } }> = await payingMcpClient(mcp, payer, {
    serverUrl: 'http://127.0.0.1:1/mcp',
  }).callTool({ name: 'scout_gaps', arguments: { limit: 2 } });
  const price: string | undefined = toolPrice({ _meta: {} })?.amountUsdc;
  if (tool.receipt?.scheme === 'push' || price === '0' || tool.result.structuredContent.n === 0) return 2;
  // @ts-expect-error: not a path of the market-intel contract
  await client.GET('/api/v1/not-a-path');
  return total + String(verdict).length;
}
`,
    );
    const errors = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], { cwd: dir }).then(
      () => '',
      (error: { stdout?: string }) => error.stdout ?? String(error),
    );
    expect(errors).toBe('');
  });
});

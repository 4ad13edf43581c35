// The agent demo: against the stack started by `npm start`, an agent wallet reads the free endpoints,
// then pays for every Data API endpoint with a signed SPL transferChecked on the local ledger and
// prints each answer with its transaction signature; it pays once more with the official x402 client
// (@x402/fetch); it loses a paid answer and retries it under the same payment identifier (charged
// once), checks the answer's signed receipt, comes back signed in instead of paying again (when
// market-intel offers sign-in-with-x), and shows a replay and a devnet payment; finally,
// when an LLM is configured, it pays for a prove/debate and follows the job to its verdict. Then the
// signal-feedback demo (signals in, proposals out) and the skill-router demo (register, verify, route,
// report). `pnpm demo scan` runs a scout scan over local fixture feeds (no internet needed) with the
// scan admin command and buys the gaps it produced. Last, an MCP client (the SDK's Client) lists
// market-intel's tools, pays for one and routes a task through skill-router's (`scripts/demo-mcp.ts`).
// `pnpm demo market-intel|signal-feedback|skill-router|scan|mcp` runs one part.
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Keypair } from '@solana/web3.js';
import { wrapFetchWithSIWx } from '@x402/extensions/sign-in-with-x';
import { wrapFetchWithPayment } from '@x402/fetch';
import { getLocalnetInfo, rpcUrlFor } from '@repo/solana-localnet';
import { encodePaymentHeader } from '@repo/x402-core';
import { fetchWithPayment } from '@repo/x402-solana/client';
import { marketIntelClient, receiptOf, waitForJob } from '@repo/api-client';
import { runSignalFeedbackDemo } from '@repo/signal-feedback/demo';
import { runSkillRouterDemo } from '@repo/skill-router/demo';
import { FIXTURE_SCAN, startFixtureFeeds } from '@repo/compute/testing';
import { runMcpDemo } from './demo-mcp';
import {
  checkReceipt,
  messageSigner,
  offerOf,
  officialClient,
  retryWithPaymentIdentifier,
  settlementOf,
  signInAgain,
  signInOffered,
} from './demo-payments';
import {
  BASE,
  LEDGER_URL,
  note,
  parsed,
  section,
  show,
  SIGNAL_FEEDBACK_DATABASE_URL,
  SIGNAL_FEEDBACK_URL,
  SKILL_ROUTER_URL,
} from './demo-support';

const env = process.env;

async function reachable(url: string, start: string): Promise<void> {
  try {
    await fetch(`${url}/livez`);
  } catch {
    throw new Error(`${url} is not reachable: start the stack first with \`${start}\``);
  }
}

async function main(): Promise<void> {
  const only = process.argv[2];
  if (
    only !== undefined &&
    !['market-intel', 'signal-feedback', 'skill-router', 'scan', 'mcp'].includes(only)
  ) {
    throw new Error(`unknown part "${only}": market-intel, signal-feedback, skill-router, scan or mcp`);
  }
  const log = (line: string) => process.stdout.write(`${line}\n`);
  if (!only || only === 'market-intel') {
    section('market-intel: an agent pays in USDC for data and for a debate');
    await marketIntel();
  }
  if (!only || only === 'scan') {
    section('market-intel: a scout scan over local fixture feeds, then an agent buys its gaps');
    await scan();
  }
  if (!only || only === 'signal-feedback') {
    section('signal-feedback: a product sends signals, analysis proposes changes, a deployment is verified');
    await reachable(SIGNAL_FEEDBACK_URL, 'npm start');
    await runSignalFeedbackDemo({
      baseUrl: SIGNAL_FEEDBACK_URL,
      databaseUrl: SIGNAL_FEEDBACK_DATABASE_URL,
      log,
    });
  }
  if (!only || only === 'skill-router') {
    section('skill-router: skills (HTTP endpoints and MCP tools) registered, verified, routed and rated');
    await reachable(SKILL_ROUTER_URL, 'npm start');
    await runSkillRouterDemo({ baseUrl: SKILL_ROUTER_URL, log });
  }
  if (!only || only === 'mcp') {
    section('MCP: an agent lists, pays for and calls tools over the Model Context Protocol');
    await reachable(BASE, 'npm start');
    await reachable(SKILL_ROUTER_URL, 'npm start');
    const { keypair, rpcUrls } = await agentWallet();
    await runMcpDemo({ marketIntelUrl: BASE, skillRouterUrl: SKILL_ROUTER_URL, keypair, rpcUrls, log, show });
  }
}

/** The agent wallet and the ledger's RPC URLs (the stack must be running). */
async function agentWallet(): Promise<{
  keypair: Keypair;
  keypairPath: string;
  rpcUrls: Record<'solana' | 'solana-devnet', string>;
}> {
  const info = await getLocalnetInfo(rpcUrlFor(LEDGER_URL, 'solana')).catch(() => {
    throw new Error(
      `the local ledger is not reachable at ${LEDGER_URL}: start the stack first with \`npm start\``,
    );
  });
  const keypairPath = env.AGENT_KEYPAIR ?? info.agentKeypairPath;
  const keypair = Keypair.fromSecretKey(
    Uint8Array.from(JSON.parse(readFileSync(path.resolve(keypairPath), 'utf8')) as number[]),
  );
  const rpcUrls = {
    solana: rpcUrlFor(LEDGER_URL, 'solana'),
    'solana-devnet': rpcUrlFor(LEDGER_URL, 'solana-devnet'),
  };
  return { keypair, keypairPath, rpcUrls };
}

/**
 * Pays one Data API call with the official x402 v2 client (`@x402/fetch` + `@x402/svm`, docs/payments.md,
 * "Paying with an official x402 client"): it answers the `PAYMENT-REQUIRED` offer with a transaction market-intel
 * co-signs as fee payer, so the agent pays the price and no SOL.
 */
async function payWithOfficialClient(
  keypair: Keypair,
  rpcUrls: Record<'solana' | 'solana-devnet', string>,
  pathAndQuery: string,
): Promise<void> {
  if (!(await offerOf(BASE + pathAndQuery))) {
    process.stdout.write(
      '\n(market-intel offers no official-scheme payment: X402_FEE_PAYER_KEYPAIR is not set)\n',
    );
    return;
  }
  const response = await wrapFetchWithPayment(
    fetch,
    await officialClient(keypair, rpcUrls),
  )(BASE + pathAndQuery);
  show(
    `GET ${pathAndQuery} (paid with the official @x402/fetch client; market-intel paid the network fee)`,
    response.status,
    parsed(await response.text()),
    settlementOf(response)?.transaction,
  );
}

/**
 * Serves the fixture feeds on a local port, runs `pnpm --filter @repo/market-intel scan` over them (it
 * follows the scan's progress) and buys the new report's gaps.
 */
async function scan(): Promise<void> {
  await reachable(BASE, 'npm start');
  const health = await fetch(`${BASE}/api/v1/health`);
  if (health.status !== 200) {
    show('GET /api/v1/health (free)', health.status, await health.json());
    process.stdout.write(
      '\nA scan needs a pipeline-runner with an LLM. Without a model: `pnpm scripted-llm` in one terminal, then\n' +
        '`LLM_BASE_URL=http://127.0.0.1:11435/v1 LLM_MODEL=scripted-model pnpm start`, and run `pnpm demo scan` again.\n',
    );
    return;
  }
  const feeds = await startFixtureFeeds();
  try {
    const dir = mkdtempSync(path.join(tmpdir(), 'scan-demo-'));
    const file = path.join(dir, 'sources.json');
    writeFileSync(
      file,
      JSON.stringify({ sectors: [{ sector: FIXTURE_SCAN.sector, sources: feeds.sources() }] }, null, 2),
    );
    process.stdout.write(`fixture feeds on ${feeds.baseUrl}; sources file ${file}\n\n`);
    const code = await new Promise<number | null>((resolve) => {
      const child = spawn(
        'pnpm',
        ['--silent', '--filter', '@repo/market-intel', 'scan', FIXTURE_SCAN.sector, '--sources-file', file],
        {
          stdio: 'inherit',
          env: {
            ...env,
            DATABASE_URL:
              env.MARKET_INTEL_DATABASE_URL ?? 'postgresql://postgres@127.0.0.1:5432/market_intel',
          },
        },
      );
      child.once('exit', resolve);
    });
    if (code !== 0) throw new Error(`the scan command exited with ${code}`);
  } finally {
    await feeds.close();
  }
  const { keypair, rpcUrls } = await agentWallet();
  const sectors = await fetch(`${BASE}/api/v1/sectors`);
  const list = (await sectors.json()) as { sectors: { sector: string }[] };
  show(
    'GET /api/v1/sectors (free)',
    sectors.status,
    list.sectors.find((s) => s.sector === FIXTURE_SCAN.sector),
  );
  const p = `/api/v1/scout/gaps?sector=${FIXTURE_SCAN.sector}&limit=3`;
  const { response, body, payment } = await fetchWithPayment(BASE + p, { keypair, rpcUrls });
  show(`GET ${p} (paid)`, response.status, body, payment?.signature);
}

async function marketIntel(): Promise<void> {
  try {
    await fetch(`${BASE}/livez`);
  } catch {
    throw new Error(
      `market-intel is not reachable at ${BASE}: start the stack first with \`npm start\` (or \`pnpm start\`)`,
    );
  }
  const { keypair, keypairPath, rpcUrls } = await agentWallet();
  process.stdout.write(`agent wallet ${keypair.publicKey.toBase58()} (keypair ${keypairPath})\n`);

  const health = await fetch(`${BASE}/api/v1/health`);
  show('GET /api/v1/health (free)', health.status, await health.json());
  const sectorsRes = await fetch(`${BASE}/api/v1/sectors`);
  const sectors = (await sectorsRes.json()) as { sectors: { sector: string }[] };
  show('GET /api/v1/sectors (free)', sectorsRes.status, sectors);
  const sector = sectors.sectors[0]?.sector ?? 'fintech';

  const paid = [
    `/api/v1/scout/gaps?sector=${sector}&limit=2`,
    `/api/v1/scout/pain-clusters?sector=${sector}&limit=3`,
    `/api/v1/scout/trends?days=7&limit=3`,
    `/api/v1/scout/keywords?limit=5`,
    `/api/v1/scout/brief`,
  ];
  let last: { path: string; signature: string; body: unknown } | undefined;
  for (const p of paid) {
    const unpaid = await fetch(BASE + p);
    const challenge = (await unpaid.json()) as { accepts?: { maxAmountRequired: string }[] };
    const price = challenge.accepts?.[0]?.maxAmountRequired;
    // Push mode here: the agent sends the transferChecked itself (the official scheme follows below).
    const { response, body, payment } = await fetchWithPayment(BASE + p, { keypair, rpcUrls, mode: 'push' });
    show(`GET ${p} (asked ${price} atomic USDC)`, response.status, body, payment?.signature);
    if (payment) last = { path: p, signature: payment.signature, body };
  }

  await payWithOfficialClient(keypair, rpcUrls, `/api/v1/scout/gaps?sector=${sector}&limit=1`);

  // Pay once, prove it: a retry that is charged once, a receipt anyone can check, a sign-in instead
  // of a second payment.
  const identified = await retryWithPaymentIdentifier(keypair, rpcUrls, sector);
  if (identified) await checkReceipt(identified, keypair.publicKey);
  const signIn = last ? await signInOffered(BASE + last.path) : false;
  if (last && signIn) await signInAgain(last.path, last.body, keypair, rpcUrls.solana);
  else
    note('Signing in instead of paying again', [
      "(skipped: this market-intel's 402 declares no sign-in-with-x challenge; it does when started with X402_SIGN_IN_WITH_X=true)",
    ]);

  if (last) {
    // The push payment presented again: the same signature in X-PAYMENT.
    const replayed: typeof fetch = (input, init) => {
      const request = new Request(input, init);
      request.headers.set('X-PAYMENT', encodePaymentHeader('solana', last.signature));
      return fetch(request);
    };
    if (signIn) {
      // With sign-in-with-x on, a used payment's answer goes only to its payer signed in: the
      // signature is public on chain, so a watcher who presents it gets nothing.
      const watcher = await replayed(BASE + last.path);
      show(
        `Replay of ${last.signature} without signing in (what a watcher of the chain can do)`,
        watcher.status,
        parsed(await watcher.text()),
      );
    }
    const replay = signIn
      ? await wrapFetchWithSIWx(replayed, await messageSigner(keypair))(BASE + last.path)
      : await replayed(BASE + last.path);
    const replayBody: unknown = await replay.json();
    process.stdout.write(
      `\n\x1b[1mReplay\x1b[0m of ${last.signature} on the same endpoint${signIn ? ' (signed in as the payer)' : ''} -> HTTP ${replay.status}, ` +
        `${JSON.stringify(replayBody) === JSON.stringify(last.body) ? 'identical body, no second charge' : 'DIFFERENT body'}\n`,
    );
    const reuse = await fetch(`${BASE}/api/v1/scout/gaps`, {
      headers: { 'X-PAYMENT': encodePaymentHeader('solana', last.signature) },
    });
    show('The same signature on another endpoint', reuse.status, await reuse.json());
  }

  const devnet = await fetchWithPayment(`${BASE}/api/v1/scout/keywords?network=devnet&limit=3`, {
    keypair,
    rpcUrls,
  });
  show(
    'GET /api/v1/scout/keywords?network=devnet (paid on the devnet ledger)',
    devnet.response.status,
    devnet.body,
    devnet.payment?.signature,
  );

  await debate(keypair, rpcUrls);
}

/**
 * Pays for a prove/debate (25 USDC) with the client package, as an agent would (its README), and
 * follows the job to its verdict with `waitForJob` and a progress bar.
 */
async function debate(keypair: Keypair, rpcUrls: Record<'solana' | 'solana-devnet', string>): Promise<void> {
  // The debate costs 25 USDC, over the payer's 1 USDC default cap per payment.
  const market = marketIntelClient(BASE, { signer: keypair, rpcUrls, limits: { maxPerPayment: '25' } });
  const { data, error, response } = await market.POST('/api/v1/prove/debate', {
    body: {
      idea:
        env.DEMO_IDEA ??
        'A reconciliation copilot that matches instant payments to invoices for mid-size fintechs, sold per seat.',
      session_config: {
        profile: 'Small Team (2-3)',
        budget: '$25K',
        timeline: '8-12 weeks',
        revenue_threshold: '$100K/year',
      },
    },
  });
  show('POST /api/v1/prove/debate (25 USDC)', response.status, data ?? error, receiptOf(response)?.signature);
  if (response.status === 503) {
    process.stdout.write(
      '\nCompute is unavailable (no payment was asked). Configure an LLM for the runner (README, "LLM") and run the demo again.\n',
    );
    return;
  }
  if (!data) return;
  const width = 30;
  const outcome = await waitForJob(data.jobId, {
    baseUrl: BASE,
    onProgress: ({ progressPct, status, elapsedMs }) => {
      const filled = Math.round((progressPct / 100) * width);
      process.stdout.write(
        `\r  ${data.jobId} [${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${String(progressPct).padStart(3)}% ${status.padEnd(9)} ${Math.round(elapsedMs / 1000)} s`,
      );
    },
  });
  process.stdout.write('\n');
  if (outcome.status === 'failed')
    show('Debate failed', 200, { error: outcome.failure.raw, refund: outcome.refund });
  else {
    const result = outcome.result as {
      verdict?: string;
      report?: { summary?: unknown; pivot_report?: unknown };
    };
    show(
      `Verdict: ${result.verdict ?? '?'}`,
      200,
      result.report?.summary ?? result.report?.pivot_report ?? result,
    );
  }
}

main().catch((err: unknown) => {
  console.error(`demo failed: ${err instanceof Error ? err.message : String(err)}`);
  process.exit(1);
});

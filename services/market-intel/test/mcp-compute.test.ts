import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import type { PaymentRequired } from '@x402/core/types';
import { AgentJob } from '@repo/schemas';
import { connectMcp } from '@repo/service-kit/testing';
import { paymentRefusalOf } from './support/mcp-payments';
import { JobAccepted } from '../src/schemas';
import { buildReport, startHarness, type Harness } from './support/harness';
import { balances, officialClient } from './support/official-client';
import { startScriptedRunner, type ScriptedRunner } from './support/runner';

// The compute tools over MCP, with a healthy runner (scripted LLM): paid as the x402 MCP transport
// says, they answer the 202's JobAccepted, and a payment presented again is a conflict naming the job.
jest.setTimeout(120_000);

let h: Harness;
let compute: ScriptedRunner;
let agent: Client;

beforeAll(async () => {
  h = await startHarness('market_intel_mcp_compute_test');
  await h.reports.importReport(buildReport(), 'import');
  compute = await startScriptedRunner(h, 'mcp');
  agent = await connectMcp(h.baseUrl);
}, 180_000);

afterAll(async () => {
  await agent?.close();
  await compute?.close();
  await h?.close();
});

describe('market-intel compute tools over MCP', () => {
  it('When prove_debate is paid in push mode, then it answers the JobAccepted, get_job follows the job, and the same payment again is payment_conflict with the jobId', async () => {
    const args = { idea: 'Receipts for software agents, settled in USDC' };
    const asked = await agent.callTool({ name: 'prove_debate', arguments: args });
    expect(asked.isError).toBe(true);
    const before = await balances(h, 'solana');
    const signature = await h.transfer({ amountAtomic: 25_000_000n });
    const meta = {
      'x402/payment': {
        x402Version: 1,
        scheme: 'exact',
        network: 'solana',
        payload: { txSignature: signature },
      },
    };
    const paid = await agent.callTool({ name: 'prove_debate', arguments: args, _meta: meta });
    expect(paid.isError).toBeUndefined();
    const accepted = JobAccepted.parse(paid.structuredContent);
    expect(accepted).toMatchObject({ status: 'pending', etaMinutes: 60, proveSessionId: expect.any(String) });
    expect((await balances(h, 'solana')).merchantUsdc - before.merchantUsdc).toBe(25_000_000n);
    expect(await h.paymentRows(signature)).toEqual([
      { status: 'completed', endpoint: 'POST /api/v1/prove/debate' },
    ]);

    const job = await agent.callTool({ name: 'get_job', arguments: { jobId: accepted.jobId } });
    expect(AgentJob.parse(job.structuredContent).jobId).toBe(accepted.jobId);

    const again = paymentRefusalOf(
      await agent.callTool({ name: 'prove_debate', arguments: args, _meta: meta }),
    );
    expect(again.required.error).toBe('payment_conflict');
    expect(again.envelope).toMatchObject({ code: 'payment_conflict', details: { jobId: accepted.jobId } });
    expect(await h.db.agentJob.count({ where: { txSignature: signature } })).toBe(1);
  });

  it('When forge_ideate is paid with the official x402 client, then it answers the JobAccepted and the agent pays 15 USDC and no fee', async () => {
    const args = { sectors: ['fintech'], context: 'B2B only' };
    const asked = await agent.callTool({ name: 'forge_ideate', arguments: args });
    const payload = await (
      await officialClient(h, h.agent)
    ).createPaymentPayload(asked.structuredContent as unknown as PaymentRequired);
    const before = await balances(h, 'solana');
    const paid = await agent.callTool({
      name: 'forge_ideate',
      arguments: args,
      _meta: { 'x402/payment': payload },
    });
    expect(paid.isError).toBeUndefined();
    expect(JobAccepted.parse(paid.structuredContent)).toMatchObject({ status: 'pending', etaMinutes: 30 });
    const after = await balances(h, 'solana');
    expect(before.payerUsdc - after.payerUsdc).toBe(15_000_000n);
    expect(after.payerSol).toBe(before.payerSol);
    expect(paid._meta?.['x402/payment-response']).toMatchObject({
      success: true,
      payer: h.agent.publicKey.toBase58(),
    });
  });
});

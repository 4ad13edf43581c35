import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { Keypair } from '@solana/web3.js';
import {
  createSIWxPayload,
  SIGN_IN_WITH_X,
  type CompleteSIWxInfo,
  type SIWxExtension,
  type SIWxPayload,
} from '@x402/extensions/sign-in-with-x';
import { GapsResponse } from '@repo/schemas';
import { connectMcp } from '@repo/service-kit/testing';
import { MCP_SIGN_IN_META } from '@repo/x402-express';
import { buildReport, startHarness, type Harness } from './support/harness';
import { balances } from './support/official-client';
import { siwxSignerOf } from './support/sign-in';

// Sign-in-with-x over MCP (docs/payments.md, "Signing in instead of paying again"): the proof rides in
// _meta["x402/sign-in-with-x"], the analogue of the payment's _meta["x402/payment"], and is checked as
// the SIGN-IN-WITH-X header is over HTTP (signature, single-use nonce, access window). The MCP SDK's
// Client, real ledger, real PostgreSQL.
jest.setTimeout(120_000);

let h: Harness;
let agent: Client;

beforeAll(async () => {
  h = await startHarness('market_intel_mcp_sign_in_test', { env: { X402_SIGN_IN_WITH_X: 'true' } });
  await h.reports.importReport(buildReport(), 'import');
  agent = await connectMcp(h.baseUrl);
}, 180_000);
afterAll(async () => {
  await agent?.close();
  await h?.close();
});

type ToolResult = Awaited<ReturnType<Client['callTool']>>;

/** The `error` of a payment-required tool result (its `PaymentRequired`), which names a refusal's reason. */
function refusalOf(result: ToolResult): unknown {
  expect(result.isError).toBe(true);
  return (result.structuredContent as { error?: unknown } | undefined)?.error;
}

/** A push payment's `_meta`: the agent's own transfer of `amountAtomic`, its signature as x402 v1. */
async function pushPayment(amountAtomic: bigint): Promise<Record<string, unknown>> {
  const signature = await h.transfer({ amountAtomic });
  return {
    'x402/payment': {
      x402Version: 1,
      scheme: 'exact',
      network: 'solana',
      payload: { txSignature: signature },
    },
  };
}

/** `payer`'s proof of the sign-in challenge in the tool error of an unpaid call of `name` with `args`. */
async function proofFor(payer: Keypair, name: string, args: Record<string, unknown>): Promise<SIWxPayload> {
  const unpaid = await agent.callTool({ name, arguments: args });
  expect(unpaid.isError).toBe(true);
  const required = unpaid.structuredContent as { extensions?: Record<string, unknown> };
  const challenge = required.extensions?.[SIGN_IN_WITH_X] as SIWxExtension;
  const chain = challenge.supportedChains[0]!;
  const info: CompleteSIWxInfo = { ...challenge.info, chainId: chain.chainId, type: chain.type };
  return createSIWxPayload(info, await siwxSignerOf(payer), challenge.info.uri);
}

describe('Sign-in-with-x over MCP', () => {
  it('When the payer of a tool call signs the challenge of its PaymentRequired and sends the proof in _meta, then the tool answers again without paying, and the same proof is refused the second time', async () => {
    const args = { sector: 'fintech', limit: 3 };
    const paid = await agent.callTool({
      name: 'scout_gaps',
      arguments: args,
      _meta: await pushPayment(100_000n),
    });
    expect(paid.isError).toBeUndefined();
    const before = await balances(h, 'solana');

    const proof = await proofFor(h.agent, 'scout_gaps', args);
    const again = await agent.callTool({
      name: 'scout_gaps',
      arguments: args,
      _meta: { [MCP_SIGN_IN_META]: proof },
    });

    expect(again.isError).toBeUndefined();
    expect(GapsResponse.parse(again.structuredContent)).toEqual(paid.structuredContent);
    expect(again._meta?.['x402/payment-response']).toBeUndefined();
    expect(await balances(h, 'solana')).toEqual(before);
    const used = await agent.callTool({
      name: 'scout_gaps',
      arguments: args,
      _meta: { [MCP_SIGN_IN_META]: proof },
    });
    expect(refusalOf(used)).toBe('invalid_siwx_nonce');
  });

  it("When a used payment is presented again over MCP, then only its payer's proof in _meta gets the stored answer", async () => {
    const args = { sector: 'fintech', limit: 2 };
    const payment = await pushPayment(100_000n);
    const paid = await agent.callTool({ name: 'scout_gaps', arguments: args, _meta: payment });
    expect(paid.isError).toBeUndefined();

    const watcher = await agent.callTool({ name: 'scout_gaps', arguments: args, _meta: payment });
    expect(refusalOf(watcher)).toBe('siwx_required');
    const stranger = await proofFor(Keypair.generate(), 'scout_gaps', args);
    const signedStranger = await agent.callTool({
      name: 'scout_gaps',
      arguments: args,
      _meta: { ...payment, [MCP_SIGN_IN_META]: stranger },
    });
    expect(refusalOf(signedStranger)).toBe('siwx_not_payer');

    const payer = await agent.callTool({
      name: 'scout_gaps',
      arguments: args,
      _meta: { ...payment, [MCP_SIGN_IN_META]: await proofFor(h.agent, 'scout_gaps', args) },
    });
    expect(payer.isError).toBeUndefined();
    expect(payer.structuredContent).toEqual(paid.structuredContent);
    expect(payer._meta?.['x402/payment-response']).toEqual(paid._meta?.['x402/payment-response']);
  });

  it('When a wallet that paid for nothing signs in, then the tool error names siwx_no_access', async () => {
    const args = { sector: 'fintech', limit: 1 };
    const proof = await proofFor(Keypair.generate(), 'scout_gaps', args);
    const result = await agent.callTool({
      name: 'scout_gaps',
      arguments: args,
      _meta: { [MCP_SIGN_IN_META]: proof },
    });
    expect(refusalOf(result)).toBe('siwx_no_access');
  });

  it('When _meta carries something that is not a proof, then the tool error names invalid_siwx_header, never an internal error', async () => {
    for (const junk of ['not a proof', 'line\nbreak', 42, { domain: 'x' }, ['a'], 'x'.repeat(20_000)]) {
      const result = await agent.callTool({
        name: 'scout_gaps',
        arguments: { limit: 1 },
        _meta: { [MCP_SIGN_IN_META]: junk },
      });
      expect({ junk, reason: refusalOf(result) }).toEqual({ junk, reason: 'invalid_siwx_header' });
    }
  });
});

import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CAPTURE_EXAMPLES, writeExamples } from '@repo/service-kit/testing';
import type { AgentJob } from '@repo/schemas';
import { waitFor } from '@repo/queue/testing';
import { fetchWithPayment } from '@repo/x402-solana/client';
import { parseReportFile, shiftReportToNow } from '../src/domain/report-file';
import { startHarness } from './support/harness';
import { startScriptedRunner, type ScriptedRunner } from './support/runner';

// The generator of src/entry-points/http/examples.json: every operation called for real against the
// service wired as production wires it (the sample report npm start imports, the local ledger, a
// runner on the scripted LLM), and its answers written down, arrays cut to two items. Runs only with
// UPDATE_OPENAPI_EXAMPLES=1; openapi-contract.test.ts checks the examples against their schemas.
const EXAMPLES_FILE = path.join(__dirname, '../src/entry-points/http/examples.json');
const run = CAPTURE_EXAMPLES ? it : it.skip;
jest.setTimeout(240_000);

describe('The OpenAPI examples', () => {
  run('When every operation is called for real, then its answers are written to examples.json', async () => {
    const h = await startHarness('market_intel_openapi_examples_test');
    let compute: ScriptedRunner | undefined;
    try {
      const file = path.join(__dirname, '../fixtures/sample-report.json');
      const report = shiftReportToNow(parseReportFile(readFileSync(file, 'utf8'), file), new Date());
      await h.reports.importReport(report, 'import');
      const out: Record<string, unknown> = {};
      const get = async (p: string) => {
        const res = await fetch(h.baseUrl + p);
        return { status: res.status, body: (await res.json()) as unknown };
      };
      const post = async (p: string, body: unknown) => {
        const res = await fetch(h.baseUrl + p, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return { status: res.status, body: (await res.json()) as unknown };
      };
      const paid = async (p: string, body?: unknown, maxAmountAtomic?: bigint) =>
        (
          await fetchWithPayment(h.baseUrl + p, {
            keypair: h.agent,
            rpcUrls: h.rpcUrls,
            mode: 'push',
            ...(maxAmountAtomic ? { maxAmountAtomic } : {}),
            ...(body
              ? {
                  init: {
                    method: 'POST',
                    headers: { 'content-type': 'application/json' },
                    body: JSON.stringify(body),
                  },
                }
              : {}),
          })
        ).body;

      out['listSectors 200'] = (await get('/api/v1/sectors')).body;
      const data: [string, string][] = [
        ['getGaps', '/api/v1/scout/gaps?sector=fintech&limit=2'],
        ['getPainClusters', '/api/v1/scout/pain-clusters?sector=fintech&limit=2'],
        ['getTrends', '/api/v1/scout/trends?days=7&limit=2'],
        ['getKeywords', '/api/v1/scout/keywords?limit=3'],
        ['getBrief', '/api/v1/scout/brief'],
      ];
      for (const [operationId, p] of data) {
        out[`${operationId} 402`] = (await get(p)).body;
        out[`${operationId} 200`] = await paid(p);
      }

      const forge = {
        sectors: ['fintech'],
        context: 'B2B finance teams of 20 to 200 people',
        product_modes: ['saas'],
      };
      const prove = {
        idea: 'A reconciliation copilot that matches instant payments to invoices for mid-size fintechs, sold per seat.',
      };
      out['forgeIdeate request'] = forge;
      out['proveDebate request'] = prove;
      // No runner yet: the health preflight answers 503 before any payment is asked.
      out['getHealth 503'] = (await get('/api/v1/health')).body;
      out['forgeIdeate 503'] = (await post('/api/v1/forge/ideate', forge)).body;
      out['proveDebate 503'] = (await post('/api/v1/prove/debate', prove)).body;

      compute = await startScriptedRunner(h, 'examples');
      out['getHealth 200'] = (await get('/api/v1/health')).body;
      out['forgeIdeate 402'] = (await post('/api/v1/forge/ideate', forge)).body;
      out['proveDebate 402'] = (await post('/api/v1/prove/debate', prove)).body;
      out['proveDebate 202'] = await paid('/api/v1/prove/debate', prove, 25_000_000n);
      const accepted = (await paid('/api/v1/forge/ideate', forge, 15_000_000n)) as { jobId: string };
      out['forgeIdeate 202'] = accepted;
      out['getJob 200'] = await waitFor(
        'the forge job to complete',
        async () => {
          const job = (await get(`/api/v1/jobs/${accepted.jobId}`)).body as AgentJob;
          return job.status === 'completed' ? job : undefined;
        },
        180_000,
      );
      writeExamples(EXAMPLES_FILE, out);
    } finally {
      await compute?.close();
      await h.close();
    }
  });
});

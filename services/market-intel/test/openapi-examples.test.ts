import { readFileSync } from 'node:fs';
import path from 'node:path';
import { CAPTURE_EXAMPLES, headerExamples, writeExamples } from '@repo/service-kit/testing';
import type { AgentJob } from '@repo/schemas';
import { waitFor } from '@repo/queue/testing';
import { fetchWithPayment } from '@repo/x402-solana/client';
import { SIGN_IN_WITH_X, wrapFetchWithSIWx } from '@x402/extensions/sign-in-with-x';
import { parseReportFile, shiftReportToNow } from '../src/domain/report-file';
import { startHarness } from './support/harness';
import { startScriptedRunner, type ScriptedRunner } from './support/runner';
import { siwxSignerOf } from './support/sign-in';

// The generator of src/entry-points/http/examples.json: every operation called for real against the
// service wired as production wires it (the sample report npm start imports, the local ledger, a
// runner on the scripted LLM), and its answers written down, arrays cut to two items, with the
// headers the document lists: those of each answer (PAYMENT-REQUIRED of a 402, the settlement of a
// paid answer, Retry-After of a 503) and the payment headers sent (X-PAYMENT in push mode,
// PAYMENT-SIGNATURE from the official scheme, SIGN-IN-WITH-X of the payer getting it again). Runs only with UPDATE_OPENAPI_EXAMPLES=1;
// openapi-contract.test.ts checks the examples against their schemas.
const EXAMPLES_FILE = path.join(__dirname, '../src/entry-points/http/examples.json');
const run = CAPTURE_EXAMPLES ? it : it.skip;
jest.setTimeout(240_000);

describe('The OpenAPI examples', () => {
  run('When every operation is called for real, then its answers are written to examples.json', async () => {
    // Sign-in-with-x on, as production runs: its challenge is in every PAYMENT-REQUIRED.
    const h = await startHarness('market_intel_openapi_examples_test', {
      env: { X402_SIGN_IN_WITH_X: 'true' },
    });
    let compute: ScriptedRunner | undefined;
    try {
      const file = path.join(__dirname, '../fixtures/sample-report.json');
      const report = shiftReportToNow(parseReportFile(readFileSync(file, 'utf8'), file), new Date());
      await h.reports.importReport(report, 'import');
      const doc = (await (await fetch(`${h.baseUrl}/openapi.json`)).json()) as Parameters<
        typeof headerExamples
      >[0];
      const out: Record<string, unknown> = {};
      // An answer's body, and the headers the document lists for its status, by operation and status.
      const record = (operationId: string, status: number, body: unknown, headers: Headers) => {
        out[`${operationId} ${status}`] = body;
        Object.assign(out, headerExamples(doc, operationId, String(status), headers));
        return body;
      };
      const call = async (operationId: string, p: string, body?: unknown) => {
        const res = await fetch(
          h.baseUrl + p,
          body === undefined
            ? {}
            : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
        );
        return record(operationId, res.status, (await res.json()) as unknown, res.headers);
      };
      // Pays as an agent would. Push mode records the answer and the X-PAYMENT sent; the official
      // scheme only the PAYMENT-SIGNATURE sent (the answer of each operation comes from push mode).
      const pay = async (
        operationId: string,
        p: string,
        mode: 'push' | 'official',
        body?: unknown,
        maxAmountAtomic?: bigint,
      ) => {
        let sent = new Headers();
        const result = await fetchWithPayment(h.baseUrl + p, {
          keypair: h.agent,
          rpcUrls: h.rpcUrls,
          mode,
          fetch: (input, init) => {
            sent = new Headers(init?.headers);
            return fetch(input, init);
          },
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
        });
        if (!result.payment || !result.response.ok)
          throw new Error(
            `${operationId} was not paid: ${result.response.status} ${JSON.stringify(result.body)}`,
          );
        Object.assign(out, headerExamples(doc, operationId, 'request', sent));
        return mode === 'push'
          ? record(operationId, result.response.status, result.body, result.response.headers)
          : result.body;
      };

      // The payer signs the challenge of a fresh 402 and gets the paid request again: the proof sent.
      const signer = await siwxSignerOf(h.agent);
      const signIn = async (operationId: string, p: string, body?: unknown) => {
        let sent = new Headers();
        const res = await wrapFetchWithSIWx((input: string | URL | Request, init?: RequestInit) => {
          const headers = new Headers(
            init?.headers ?? (input instanceof Request ? input.headers : undefined),
          );
          if (headers.has(SIGN_IN_WITH_X)) sent = headers;
          return fetch(input, init);
        }, signer)(
          h.baseUrl + p,
          body === undefined
            ? {}
            : { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) },
        );
        if (!res.ok || !sent.has(SIGN_IN_WITH_X))
          throw new Error(`${operationId} was not answered to the signed-in payer: ${res.status}`);
        Object.assign(out, headerExamples(doc, operationId, 'request', sent));
      };

      await call('listSectors', '/api/v1/sectors');
      await call('getReceiptKeys', '/.well-known/jwks.json');
      await call('getDidDocument', '/.well-known/did.json');
      const data: [string, string][] = [
        ['getGaps', '/api/v1/scout/gaps?sector=fintech&limit=2'],
        ['getPainClusters', '/api/v1/scout/pain-clusters?sector=fintech&limit=2'],
        ['getTrends', '/api/v1/scout/trends?days=7&limit=2'],
        ['getKeywords', '/api/v1/scout/keywords?limit=3'],
        ['getBrief', '/api/v1/scout/brief'],
      ];
      for (const [operationId, p] of data) {
        await call(operationId, p);
        await pay(operationId, p, 'push');
        await pay(operationId, p, 'official');
        await signIn(operationId, p);
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
      await call('getHealth', '/api/v1/health');
      await call('forgeIdeate', '/api/v1/forge/ideate', forge);
      await call('proveDebate', '/api/v1/prove/debate', prove);

      compute = await startScriptedRunner(h, 'examples');
      await call('getHealth', '/api/v1/health');
      await call('forgeIdeate', '/api/v1/forge/ideate', forge);
      await call('proveDebate', '/api/v1/prove/debate', prove);
      await pay('proveDebate', '/api/v1/prove/debate', 'push', prove, 25_000_000n);
      const accepted = (await pay('forgeIdeate', '/api/v1/forge/ideate', 'push', forge, 15_000_000n)) as {
        jobId: string;
      };
      out['getJob 200'] = await waitFor(
        'the forge job to complete',
        async () => {
          const job = (await (await fetch(`${h.baseUrl}/api/v1/jobs/${accepted.jobId}`)).json()) as AgentJob;
          return job.status === 'completed' ? job : undefined;
        },
        180_000,
      );
      // After the job the examples show: the jobs these start are left to the runner.
      await pay('proveDebate', '/api/v1/prove/debate', 'official', prove, 25_000_000n);
      await pay('forgeIdeate', '/api/v1/forge/ideate', 'official', forge, 15_000_000n);
      await signIn('proveDebate', '/api/v1/prove/debate', prove);
      await signIn('forgeIdeate', '/api/v1/forge/ideate', forge);
      writeExamples(EXAMPLES_FILE, out);
    } finally {
      await compute?.close();
      await h.close();
    }
  });
});

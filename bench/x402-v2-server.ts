// The peer of market-intel's official-scheme measurement (bench/market-intel.ts): the reference x402 v2
// Express middleware `@x402/express`, with `@x402/svm`'s exact facilitator in this process (no
// facilitator over HTTP), guarding the route market-intel sells, on the same ledger, the same mint,
// the same merchant wallet and the same fee payer. Its answer is the sample report's sector, served
// from memory as market-intel serves its cached report. The official client pays it exactly as it
// pays market-intel: verify (with a simulation) before the handler, then settle (verify again,
// co-sign, send, confirm) before the answer is sent.
//
// Environment: PORT, BENCH_RPC_URL, BENCH_MINT, BENCH_PAY_TO (the merchant wallet),
// BENCH_FEE_PAYER_KEYPAIR (a Solana keypair file), BENCH_PRICE_ATOMIC (atomic USDC units).
import { readFileSync } from 'node:fs';
import path from 'node:path';
import express from 'express';
import { createKeyPairSignerFromBytes, createSolanaRpc } from '@solana/kit';
import { x402Facilitator } from '@x402/core/facilitator';
import type { FacilitatorClient } from '@x402/core/server';
import { paymentMiddleware, x402ResourceServer } from '@x402/express';
import { toFacilitatorSvmSigner } from '@x402/svm';
import { ExactSvmScheme as ExactSvmFacilitator } from '@x402/svm/exact/facilitator';
import { ExactSvmScheme as ExactSvmServer } from '@x402/svm/exact/server';
import { CAIP2_NETWORKS } from '@repo/x402-core';

const need = (name: string): string => {
  const value = process.env[name];
  if (!value) throw new Error(`${name} is not set`);
  return value;
};

const network = CAIP2_NETWORKS.solana as `${string}:${string}`;
const mint = need('BENCH_MINT');
const feePayerBytes = Uint8Array.from(
  JSON.parse(readFileSync(need('BENCH_FEE_PAYER_KEYPAIR'), 'utf8')) as number[],
);
const report = JSON.parse(
  readFileSync(path.join(__dirname, '../services/market-intel/fixtures/sample-report.json'), 'utf8'),
) as { sectors: { sector: string; gaps: unknown[] }[] };

async function main(): Promise<void> {
  const signer = await createKeyPairSignerFromBytes(feePayerBytes);
  const facilitator = new x402Facilitator().register(
    network,
    new ExactSvmFacilitator(
      toFacilitatorSvmSigner(signer, { [network]: createSolanaRpc(need('BENCH_RPC_URL')) }),
    ),
  );
  // The facilitator in-process, behind the interface the middleware calls over HTTP in production.
  const local: FacilitatorClient = {
    verify: (payload, requirements) => facilitator.verify(payload, requirements),
    settle: (payload, requirements) => facilitator.settle(payload, requirements),
    // x402Facilitator types its kinds' network as a plain string, the client interface as CAIP-2.
    getSupported: async () =>
      facilitator.getSupported() as Awaited<ReturnType<FacilitatorClient['getSupported']>>,
  };
  const server = new x402ResourceServer(local).register(network, new ExactSvmServer());

  const app = express();
  app.use(
    paymentMiddleware(
      {
        'GET /api/v1/scout/gaps': {
          accepts: {
            scheme: 'exact',
            network,
            payTo: need('BENCH_PAY_TO'),
            price: { amount: need('BENCH_PRICE_ATOMIC'), asset: mint },
          },
          description: 'Market gaps: trends crossed with pain signals',
          mimeType: 'application/json',
        },
      },
      server,
    ),
  );
  app.get('/api/v1/scout/gaps', (req, res) => {
    const sector = report.sectors.find((s) => s.sector === req.query.sector) ?? report.sectors[0];
    res.json({ sector: sector?.sector, gaps: sector?.gaps.slice(0, Number(req.query.limit ?? 5)) });
  });
  const listener = app.listen(Number(process.env.PORT ?? 0), '127.0.0.1', () => {
    const address = listener.address();
    process.stdout.write(`listening ${typeof address === 'object' && address ? address.port : ''}\n`);
  });
  process.on('SIGTERM', () => listener.close(() => process.exit(0)));
}

main().catch((err: unknown) => {
  console.error(err);
  process.exit(1);
});

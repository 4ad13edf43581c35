// Measures SolanaPaymentVerifier.verify() the way the paid routes use it: spawns the local ledger in a
// child process (never in this one: litesvm corrupts float maths in-process), pre-sends N distinct USDC
// transfers into the merchant account, then verifies them C at a time and reports throughput, latency
// percentiles and this process's CPU time per verification (process.cpuUsage around that phase only).
//
//   node --require tsx/cjs --conditions=@repo/source packages/x402-solana/bench/verify.ts
//   env: N (600), C (32), ROUNDS (3), PROFILE (a file: CPU profile of the verify rounds only, for DevTools)
import { randomInt } from 'node:crypto';
import fs from 'node:fs';
import { Session } from 'node:inspector/promises';
import { Keypair } from '@solana/web3.js';
import { fundWallet, sendUsdcTransfer, spawnLocalnet } from '@repo/solana-localnet';
import { SolanaPaymentVerifier } from '../src/index';

const N = Number(process.env.N ?? 600);
const C = Number(process.env.C ?? 32);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const PROFILE = process.env.PROFILE;
const PRICE = 100_000n;

function pct(sorted: readonly number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? NaN;
}

async function main(): Promise<void> {
  const localnet = await spawnLocalnet({ port: 0 });
  try {
    const { rpcUrl, mint, merchantTokenAccount } = localnet.networks.solana;
    const payer = Keypair.generate();
    await fundWallet({
      rpcUrl,
      owner: payer.publicKey.toBase58(),
      usdcAtomic: PRICE * BigInt(N) * 2n,
      lamports: 100_000_000_000,
    });

    const t0 = performance.now();
    const signatures: string[] = [];
    for (let i = 0; i < N; i += 16) {
      const batch = Array.from({ length: Math.min(16, N - i) }, () =>
        sendUsdcTransfer({
          rpcUrl,
          payer,
          mint,
          destinationTokenAccount: merchantTokenAccount,
          amountAtomic: PRICE,
          computeUnitPriceMicroLamports: randomInt(1, 2 ** 20),
          waitForLanding: false,
        }),
      );
      signatures.push(...(await Promise.all(batch)));
    }
    if (new Set(signatures).size !== signatures.length) throw new Error('duplicate signatures: rerun');
    console.log(`sent ${N} transfers in ${(performance.now() - t0).toFixed(0)} ms`);

    // The first verifications also warm up the JIT and the connection pool.
    const verifier = new SolanaPaymentVerifier(
      { network: 'solana', rpcUrl, asset: mint, payTo: merchantTokenAccount },
      { fetchAttempts: 4, fetchDelayMs: 100, freshnessWindowSeconds: 3600 },
    );
    const session = PROFILE ? new Session() : undefined;
    if (session) {
      session.connect();
      await session.post('Profiler.enable');
      await session.post('Profiler.start');
    }
    for (let round = 1; round <= ROUNDS; round += 1) {
      const latencies: number[] = [];
      let next = 0;
      const cpu0 = process.cpuUsage();
      const r0 = performance.now();
      await Promise.all(
        Array.from({ length: C }, async () => {
          while (next < signatures.length) {
            const signature = signatures[next++] as string;
            const started = performance.now();
            const payment = await verifier.verify(signature, PRICE);
            latencies.push(performance.now() - started);
            if (payment.amountAtomic !== PRICE) throw new Error('wrong amount');
          }
        }),
      );
      const wallMs = performance.now() - r0;
      const cpu = process.cpuUsage(cpu0);
      latencies.sort((a, b) => a - b);
      console.log(
        `round ${round} (C=${C}, ${latencies.length} verifications): ${((latencies.length * 1000) / wallMs).toFixed(0)}/s, ` +
          `p50 ${pct(latencies, 0.5).toFixed(2)} ms, p90 ${pct(latencies, 0.9).toFixed(2)} ms, p99 ${pct(latencies, 0.99).toFixed(2)} ms, ` +
          `max ${(latencies[latencies.length - 1] ?? 0).toFixed(2)} ms, ` +
          `CPU ${((cpu.user + cpu.system) / 1000 / latencies.length).toFixed(3)} ms per verify (user ${(cpu.user / 1000 / latencies.length).toFixed(3)})`,
      );
    }
    if (session && PROFILE) {
      const { profile } = await session.post('Profiler.stop');
      fs.writeFileSync(PROFILE, JSON.stringify(profile));
      session.disconnect();
      console.log(`CPU profile of the verify rounds: ${PROFILE}`);
    }
  } finally {
    await localnet.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

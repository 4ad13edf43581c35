// Measures the ledger's getTransaction path the way an x402 verifier uses it: pre-sends N distinct USDC
// transfers, then fires one getTransaction per signature from C concurrent keep-alive HTTP callers and
// reports throughput, latency percentiles and the ledger process's CPU time per call.
//
//   node --require tsx/cjs --conditions=@repo/source packages/solana-localnet/bench/get-transaction.ts
//   env: N (2000), C (32), ROUNDS (3), RATE (calls/s; open loop at most C in flight, 0 = as fast as possible), LEDGER_NODE_ARGS (e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof"),
//        CLIENT=web3 (web3.js Connection, its own fetch) or CLIENT=fetch (web3.js over the platform fetch)
//        instead of raw keep-alive HTTP
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { ComputeBudgetProgram, Connection, Keypair, PublicKey, Transaction } from '@solana/web3.js';
import { createTransferCheckedInstruction, getAssociatedTokenAddressSync } from '../src/deps';
import { getLocalnetInfo } from '../src/client';

const N = Number(process.env.N ?? 2000);
const C = Number(process.env.C ?? 32);
const ROUNDS = Number(process.env.ROUNDS ?? 3);
const NODE_ARGS = (process.env.LEDGER_NODE_ARGS ?? '').split(' ').filter(Boolean);
const CLIENT = process.env.CLIENT ?? 'http';
const RATE = Number(process.env.RATE ?? 0);

function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  // utime and stime are fields 14 and 15 (1-based), i.e. 11 and 12 after the "pid (comm) " prefix.
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / 100;
}

function pct(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * q))] ?? NaN;
}

async function main(): Promise<void> {
  const cli = path.join(__dirname, '..', 'src', 'cli.ts');
  const child = spawn(
    process.execPath,
    [
      ...NODE_ARGS,
      '--require',
      require.resolve('tsx/cjs'),
      '--conditions=@repo/source',
      cli,
      'start',
      '--memory',
      '--port',
      '0',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  const url = await new Promise<string>((resolve) => {
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => {
      out += c;
      const m = /listening on (http:\/\/\S+)/.exec(out);
      if (m?.[1]) resolve(m[1]);
    });
  });
  child.stdout.resume();
  const info = await getLocalnetInfo(url);
  const payer = Keypair.fromSecretKey(
    Uint8Array.from(JSON.parse(fs.readFileSync(info.agentKeypairPath, 'utf8')) as number[]),
  );

  // Pre-send N distinct transfers (a distinct compute-unit price makes each signature unique).
  const connection = new Connection(url, 'confirmed');
  const mint = new PublicKey(info.mint);
  const source = getAssociatedTokenAddressSync(mint, payer.publicKey);
  const signatures: string[] = [];
  const t0 = Date.now();
  const cpuSend0 = cpuMs(child.pid ?? 0);
  let blockhash = (await connection.getLatestBlockhash()).blockhash;
  for (let i = 0; i < N; i += 8) {
    if (i % 400 === 0) blockhash = (await connection.getLatestBlockhash()).blockhash;
    const batch = Array.from({ length: Math.min(8, N - i) }, (_, j) => {
      const tx = new Transaction({ feePayer: payer.publicKey, recentBlockhash: blockhash }).add(
        ComputeBudgetProgram.setComputeUnitPrice({ microLamports: i + j + 1 }),
        createTransferCheckedInstruction(
          source,
          mint,
          new PublicKey(info.merchantTokenAccount),
          payer.publicKey,
          1000n,
          6,
        ),
      );
      tx.sign(payer);
      return connection.sendRawTransaction(tx.serialize(), { skipPreflight: false });
    });
    signatures.push(...(await Promise.all(batch)));
  }
  const sendMs = Date.now() - t0;
  const sendCpu = cpuMs(child.pid ?? 0) - cpuSend0;
  console.log(
    `sent ${N} transfers in ${sendMs} ms (${((N * 1000) / sendMs).toFixed(0)}/s), ledger CPU ${(sendCpu / N).toFixed(3)} ms per send (incl. blockhash calls)`,
  );

  const idle0 = cpuMs(child.pid ?? 0);
  await new Promise((r) => setTimeout(r, 2000));
  console.log(`ledger CPU while idle: ${((cpuMs(child.pid ?? 0) - idle0) / 20).toFixed(1)}% of a core`);

  const agent = new http.Agent({ keepAlive: true, maxSockets: C });
  const target = new URL(url);
  let sockets = 0;
  agent.on('free', () => undefined);
  const call = (sig: string): Promise<number> =>
    new Promise((resolve, reject) => {
      const body = JSON.stringify({
        method: 'getTransaction',
        jsonrpc: '2.0',
        params: [sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 }],
        id: '00000000-0000-4000-8000-000000000000',
      });
      const start = process.hrtime.bigint();
      const req = http.request(
        {
          host: target.hostname,
          port: target.port,
          path: '/',
          method: 'POST',
          agent,
          headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) },
        },
        (res) => {
          let len = 0;
          res.on('data', (c: Buffer) => (len += c.length));
          res.on('end', () => {
            if (res.statusCode !== 200 || len < 100) reject(new Error(`bad answer ${res.statusCode} ${len}`));
            else resolve(Number(process.hrtime.bigint() - start) / 1e6);
          });
        },
      );
      req.on('socket', (s) => {
        if (!(s as unknown as { counted?: boolean }).counted) {
          (s as unknown as { counted?: boolean }).counted = true;
          sockets += 1;
        }
      });
      req.on('error', reject);
      req.end(body);
    });
  // CLIENT=fetch: what the x402 verifier does (web3.js over the platform fetch, i.e. undici's pool).
  const web3 = new Connection(
    url,
    CLIENT === 'fetch'
      ? { commitment: 'confirmed', fetch: (input, init) => fetch(input, init) }
      : 'confirmed',
  );
  const callWeb3 = async (sig: string): Promise<number> => {
    const start = process.hrtime.bigint();
    const tx = await web3.getTransaction(sig, { commitment: 'confirmed', maxSupportedTransactionVersion: 0 });
    if (tx === null) throw new Error('null transaction');
    return Number(process.hrtime.bigint() - start) / 1e6;
  };
  const one = CLIENT === 'http' ? call : callWeb3;

  for (let round = 1; round <= ROUNDS; round += 1) {
    const latencies: number[] = [];
    let next = 0;
    const cpu0 = cpuMs(child.pid ?? 0);
    const r0 = process.hrtime.bigint();
    await Promise.all(
      Array.from({ length: C }, async () => {
        while (next < signatures.length) {
          const index = next++;
          // Open loop: call i is due at i / RATE seconds after the start of the round.
          const due = RATE > 0 ? Number(r0) / 1e6 + (index * 1000) / RATE : 0;
          const wait = due - Number(process.hrtime.bigint()) / 1e6;
          if (wait > 0) await new Promise((r) => setTimeout(r, wait));
          latencies.push(await one(signatures[index] as string));
        }
      }),
    );
    const wallMs = Number(process.hrtime.bigint() - r0) / 1e6;
    const cpu = cpuMs(child.pid ?? 0) - cpu0;
    latencies.sort((a, b) => a - b);
    console.log(
      `round ${round} (${CLIENT}, C=${C}${RATE > 0 ? `, rate ${RATE}/s` : ''}): ${((latencies.length * 1000) / wallMs).toFixed(0)} calls/s, ` +
        `p50 ${pct(latencies, 0.5).toFixed(2)} ms, p90 ${pct(latencies, 0.9).toFixed(2)} ms, p99 ${pct(latencies, 0.99).toFixed(2)} ms, ` +
        `max ${(latencies[latencies.length - 1] ?? 0).toFixed(2)} ms, ledger CPU ${((cpu * 1000) / latencies.length).toFixed(0)} µs/call` +
        (CLIENT === 'http' ? `, sockets opened so far ${sockets}` : ''),
    );
  }
  agent.destroy();
  const exited = new Promise((r) => child.once('exit', r));
  child.kill('SIGTERM');
  await exited;
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});

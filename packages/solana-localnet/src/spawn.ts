import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { Keypair } from '@solana/web3.js';
import { fundWallet, getLocalnetInfo } from './client';
import { LOCALNET_NETWORKS, type LocalnetNetwork } from './ledger';
import { rpcUrlFor, type Localnet, type LocalnetNetworkInfo } from './server';

/** Options of {@link spawnLocalnet}. */
export interface SpawnLocalnetOptions {
  /** Listen port; 0 (default) picks a free one. */
  port?: number;
  host?: string;
  /** Data directory for persistent state; default in memory. */
  dataDir?: string;
  /** Milliseconds to wait for the ledger to listen; default 60 000. */
  timeoutMs?: number;
  /** Where the ledger's stderr goes; default discarded. */
  onLog?: (line: string) => void;
}

/**
 * Starts the ledger in a child process (the CLI's `start`) and returns the same {@link Localnet}
 * handle as {@link startLocalnet}, talking to it over JSON-RPC.
 *
 * Use this wherever other work shares the process (services, tests of other packages, benchmarks):
 * litesvm 0.8.0 leaves the x87 FPU register stack dirty after running programs, which makes V8's
 * x87-based float modulo return NaN in the same thread (dates serialised as `+00:NaN`, for one)
 * — see LiteSVM/litesvm#171. A separate process keeps that state away from everything else.
 *
 * @throws Error when the ledger does not start listening within `timeoutMs`
 */
export async function spawnLocalnet(options: SpawnLocalnetOptions = {}): Promise<Localnet> {
  const fromSource = __filename.endsWith('.ts');
  const cli = path.join(__dirname, fromSource ? 'cli.ts' : 'cli.js');
  const args = [
    ...(fromSource ? ['--require', require.resolve('tsx/cjs'), '--conditions=@repo/source'] : []),
    cli,
    'start',
    '--port',
    String(options.port ?? 0),
    '--host',
    options.host ?? '127.0.0.1',
    ...(options.dataDir ? ['--data-dir', options.dataDir] : ['--memory']),
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const killOnExit = (): void => {
    child.kill('SIGKILL');
  };
  process.once('exit', killOnExit);
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
    for (const line of chunk.split('\n')) if (line && options.onLog) options.onLog(line);
  });

  const url = await new Promise<string>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`solana-localnet did not start within ${options.timeoutMs ?? 60_000} ms`));
    }, options.timeoutMs ?? 60_000);
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match?.[1]) {
        clearTimeout(timer);
        resolve(match[1]);
      }
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`solana-localnet exited with code ${code} before listening`));
    });
  });
  child.stdout.resume();

  const infos = await Promise.all(LOCALNET_NETWORKS.map((n) => getLocalnetInfo(rpcUrlFor(url, n))));
  const networks = {} as Record<LocalnetNetwork, LocalnetNetworkInfo>;
  for (const info of infos) {
    networks[info.network] = {
      network: info.network,
      caip2Network: info.caip2Network,
      rpcUrl: info.rpcUrl,
      mint: info.mint,
      merchantOwner: info.merchantOwner,
      merchantTokenAccount: info.merchantTokenAccount,
    };
  }
  const first = infos[0];
  if (!first) throw new Error('solana-localnet reported no network');
  const readKeypair = (file: string): Keypair =>
    Keypair.fromSecretKey(Uint8Array.from(JSON.parse(fs.readFileSync(file, 'utf8')) as number[]));

  return {
    url,
    networks,
    agent: {
      publicKey: first.agent,
      keypairPath: first.agentKeypairPath,
      keypair: readKeypair(first.agentKeypairPath),
    },
    feePayer: {
      publicKey: first.feePayer,
      keypairPath: first.feePayerKeypairPath,
      keypair: readKeypair(first.feePayerKeypairPath),
    },
    refundWallet: {
      publicKey: first.refundWallet,
      keypairPath: first.refundKeypairPath,
      keypair: readKeypair(first.refundKeypairPath),
    },
    async fund(owner, opts = {}) {
      const targets = !opts.network || opts.network === 'all' ? LOCALNET_NETWORKS : [opts.network];
      for (const network of targets) {
        await fundWallet({
          rpcUrl: rpcUrlFor(url, network),
          owner,
          usdcAtomic: opts.usdcAtomic,
          lamports: opts.lamports,
        });
      }
    },
    async close() {
      process.off('exit', killOnExit);
      if (child.exitCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGTERM');
      await exited;
    },
  };
}

#!/usr/bin/env node
import { PublicKey } from '@solana/web3.js';
import { formatUsdcAmount, parseUsdcAmount } from './amounts';
import { fundWallet, getLocalnetInfo, type LocalnetRpcInfo } from './client';
import { LOCALNET_NETWORKS, type LocalnetNetwork } from './ledger';
import { RpcError } from './rpc-error';
import { formatLocalnetAddresses, rpcUrlFor, startLocalnet } from './server';

const USAGE = `Usage:
  solana-localnet start [--port 8899] [--host 127.0.0.1] [--data-dir .data/ledger | --memory]
  solana-localnet fund <address> [usdc] [--rpc http://127.0.0.1:8899] [--network solana|solana-devnet|all]
  solana-localnet info [--rpc http://127.0.0.1:8899]

  usdc is whole USDC as a decimal (25, 0.5); default 1000. fund also airdrops 10 SOL.`;

const DEFAULT_RPC = 'http://127.0.0.1:8899';
const DEFAULT_DATA_DIR = '.data/ledger';

/** Where the CLI writes; injectable for tests. */
export interface CliIo {
  out: (text: string) => void;
  err: (text: string) => void;
}

class UsageError extends Error {}

interface ParsedArgs {
  positional: string[];
  flags: Map<string, string | true>;
}

function parseArgs(argv: readonly string[]): ParsedArgs {
  const positional: string[] = [];
  const flags = new Map<string, string | true>();
  for (let i = 0; i < argv.length; i += 1) {
    const arg = argv[i] ?? '';
    if (!arg.startsWith('--')) {
      positional.push(arg);
      continue;
    }
    const eq = arg.indexOf('=');
    if (eq !== -1) {
      flags.set(arg.slice(2, eq), arg.slice(eq + 1));
    } else if (arg === '--memory' || arg === '--help') {
      flags.set(arg.slice(2), true);
    } else {
      const value = argv[i + 1];
      if (value === undefined || value.startsWith('--')) throw new UsageError(`${arg} needs a value`);
      flags.set(arg.slice(2), value);
      i += 1;
    }
  }
  return { positional, flags };
}

function stringFlag(args: ParsedArgs, name: string, fallback: string): string {
  const value = args.flags.get(name);
  return typeof value === 'string' ? value : fallback;
}

function checkFlags(args: ParsedArgs, allowed: readonly string[]): void {
  for (const name of args.flags.keys()) {
    if (!allowed.includes(name)) throw new UsageError(`unknown option --${name}`);
  }
}

function unreachable(rpc: string, error: unknown): Error {
  if (error instanceof RpcError) return error;
  return new Error(
    `cannot reach the ledger at ${rpc} (${(error as Error).message}); start it with: pnpm ledger start`,
  );
}

async function start(args: ParsedArgs, io: CliIo): Promise<number> {
  checkFlags(args, ['port', 'host', 'data-dir', 'memory']);
  const port = Number(stringFlag(args, 'port', '8899'));
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be 0..65535');
  const localnet = await startLocalnet({
    port,
    host: stringFlag(args, 'host', '127.0.0.1'),
    dataDir: args.flags.has('memory') ? undefined : stringFlag(args, 'data-dir', DEFAULT_DATA_DIR),
    log: (line) => io.err(`[solana-localnet] ${line}`),
  });
  io.out(formatLocalnetAddresses(localnet));
  await new Promise<void>((resolve) => {
    const stop = (signal: NodeJS.Signals): void => {
      io.err(`[solana-localnet] ${signal}: flushing and stopping`);
      process.off('SIGINT', stop);
      process.off('SIGTERM', stop);
      resolve();
    };
    process.on('SIGINT', stop);
    process.on('SIGTERM', stop);
  });
  await localnet.close();
  return 0;
}

async function fund(args: ParsedArgs, io: CliIo): Promise<number> {
  checkFlags(args, ['rpc', 'network']);
  const [address, usdc] = args.positional;
  if (address === undefined) throw new UsageError('fund needs an address');
  try {
    new PublicKey(address);
  } catch {
    throw new UsageError(`"${address}" is not a base58 Solana address`);
  }
  let usdcAtomic: bigint;
  try {
    usdcAtomic = parseUsdcAmount(usdc ?? '1000');
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const network = stringFlag(args, 'network', 'all');
  if (network !== 'all' && !LOCALNET_NETWORKS.includes(network as LocalnetNetwork)) {
    throw new UsageError('--network must be solana, solana-devnet or all');
  }
  const rpc = stringFlag(args, 'rpc', DEFAULT_RPC);
  const targets = network === 'all' ? LOCALNET_NETWORKS : [network as LocalnetNetwork];
  for (const target of targets) {
    const rpcUrl = rpcUrlFor(rpc, target);
    try {
      const result = await fundWallet({ rpcUrl, owner: address, usdcAtomic });
      io.out(
        `${target}: funded ${result.owner} with ${formatUsdcAmount(BigInt(result.usdcAtomic))} USDC and ${
          result.lamports / 1e9
        } SOL; token account ${result.tokenAccount} (mint ${result.mint})`,
      );
    } catch (error) {
      throw unreachable(rpcUrl, error);
    }
  }
  return 0;
}

async function info(args: ParsedArgs, io: CliIo): Promise<number> {
  checkFlags(args, ['rpc']);
  const rpc = stringFlag(args, 'rpc', DEFAULT_RPC);
  const infos: LocalnetRpcInfo[] = [];
  for (const network of LOCALNET_NETWORKS) {
    const rpcUrl = rpcUrlFor(rpc, network);
    try {
      infos.push(await getLocalnetInfo(rpcUrl));
    } catch (error) {
      throw unreachable(rpcUrl, error);
    }
  }
  const [main] = infos;
  const networks = Object.fromEntries(infos.map((i) => [i.network, i])) as Record<
    LocalnetNetwork,
    LocalnetRpcInfo
  >;
  io.out(
    formatLocalnetAddresses({
      url: rpc.replace(/\/+$/, ''),
      networks,
      agent: { publicKey: main?.agent ?? '', keypairPath: main?.agentKeypairPath ?? '' },
      ...(main?.feePayer !== undefined
        ? { feePayer: { publicKey: main.feePayer, keypairPath: main.feePayerKeypairPath } }
        : {}),
      ...(main?.refundWallet !== undefined
        ? { refundWallet: { publicKey: main.refundWallet, keypairPath: main.refundKeypairPath } }
        : {}),
    }),
  );
  return 0;
}

/**
 * Runs the CLI with `argv` (without the node and script paths).
 * @returns the process exit code: 0 success, 1 failure (e.g. ledger unreachable), 2 usage error
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<number> {
  try {
    const args = parseArgs(argv);
    const [command, ...rest] = args.positional;
    args.positional = rest;
    if (command === undefined || args.flags.has('help')) {
      io.out(USAGE);
      return command === undefined && !args.flags.has('help') ? 2 : 0;
    }
    switch (command) {
      case 'start':
        return await start(args, io);
      case 'fund':
        return await fund(args, io);
      case 'info':
        return await info(args, io);
      default:
        throw new UsageError(`unknown command "${command}"`);
    }
  } catch (error) {
    if (error instanceof UsageError) {
      io.err(`error: ${error.message}\n\n${USAGE}`);
      return 2;
    }
    io.err(`error: ${(error as Error).message}`);
    return 1;
  }
}

if (require.main === module) {
  void runCli(process.argv.slice(2), {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
  }).then((code) => {
    process.exitCode = code;
  });
}

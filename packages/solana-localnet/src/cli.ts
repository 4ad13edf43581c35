#!/usr/bin/env node
import { parseArgs, type ParseArgsConfig } from 'node:util';
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

type Options = NonNullable<ParseArgsConfig['options']>;

// The options of each command; every command also takes --help.
const HELP = { help: { type: 'boolean' } } as const satisfies Options;
const START_OPTIONS = {
  port: { type: 'string', default: '8899' },
  host: { type: 'string', default: '127.0.0.1' },
  'data-dir': { type: 'string', default: DEFAULT_DATA_DIR },
  memory: { type: 'boolean', default: false },
} as const satisfies Options;
const FUND_OPTIONS = {
  rpc: { type: 'string', default: DEFAULT_RPC },
  network: { type: 'string', default: 'all' },
} as const satisfies Options;
const INFO_OPTIONS = { rpc: { type: 'string', default: DEFAULT_RPC } } as const satisfies Options;
const ALL_OPTIONS: Options = { ...START_OPTIONS, ...FUND_OPTIONS, ...INFO_OPTIONS, ...HELP };

/** The command (first positional) and whether --help was given, read with every command's options. */
function scanArgs(argv: readonly string[]): { command: string | undefined; help: boolean } {
  // Not strict: the command's own parse reports bad options, and --help wins over them.
  const { positionals, values } = parseArgs({
    args: [...argv],
    options: ALL_OPTIONS,
    allowPositionals: true,
    strict: false,
  });
  return { command: positionals[0], help: values.help === true };
}

/**
 * Parses a command's arguments with its options.
 * @returns the option values (defaults applied) and the positionals after the command
 * @throws UsageError for an option the command does not take, a missing value, or a value given to a
 *   switch
 */
function parseCommand<T extends Options>(argv: readonly string[], options: T) {
  // A token pass first, for this CLI's shorter messages (`unknown option --x`, `--port needs a value`)
  // where parseArgs' own would explain positionals starting with a dash.
  const { tokens } = parseArgs({
    args: [...argv],
    options: ALL_OPTIONS,
    allowPositionals: true,
    strict: false,
    tokens: true,
  });
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const option = token.name === 'help' ? HELP.help : options[token.name];
    if (option === undefined) throw new UsageError(`unknown option ${token.rawName}`);
    if (
      option.type === 'string' &&
      !token.inlineValue &&
      (token.value === undefined || token.value.startsWith('-'))
    ) {
      throw new UsageError(`${token.rawName} needs a value`);
    }
  }
  try {
    const { values, positionals } = parseArgs({
      args: [...argv],
      options: { ...options, ...HELP },
      allowPositionals: true,
      strict: true,
    });
    return { values, positionals: positionals.slice(1) };
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
}

function unreachable(rpc: string, error: unknown): Error {
  if (error instanceof RpcError) return error;
  return new Error(
    `cannot reach the ledger at ${rpc} (${(error as Error).message}); start it with: pnpm ledger start`,
  );
}

async function start(argv: readonly string[], io: CliIo): Promise<number> {
  const { values } = parseCommand(argv, START_OPTIONS);
  const port = Number(values.port);
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new UsageError('--port must be 0..65535');
  const localnet = await startLocalnet({
    port,
    host: values.host,
    dataDir: values.memory ? undefined : values['data-dir'],
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

async function fund(argv: readonly string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommand(argv, FUND_OPTIONS);
  const [address, usdc] = positionals;
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
  const { network, rpc } = values;
  if (network !== 'all' && !LOCALNET_NETWORKS.includes(network as LocalnetNetwork)) {
    throw new UsageError('--network must be solana, solana-devnet or all');
  }
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

async function info(argv: readonly string[], io: CliIo): Promise<number> {
  const { rpc } = parseCommand(argv, INFO_OPTIONS).values;
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
    const { command, help } = scanArgs(argv);
    if (command === undefined || help) {
      io.out(USAGE);
      return help ? 0 : 2;
    }
    switch (command) {
      case 'start':
        return await start(argv, io);
      case 'fund':
        return await fund(argv, io);
      case 'info':
        return await info(argv, io);
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

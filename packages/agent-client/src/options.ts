import { existsSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { parseArgs, type ParseArgsConfig } from 'node:util';
import { DEFAULT_MAX_AMOUNT_ATOMIC, parseUsdc, usdcArgument } from './usdc';

/** Default JSON-RPC URL of the main network (the local ledger). */
export const DEFAULT_RPC_URL = 'http://127.0.0.1:8899';
/** Default JSON-RPC URL of the test network (the local ledger's devnet). */
export const DEFAULT_DEVNET_RPC_URL = 'http://127.0.0.1:8899/devnet';
/** Where the local ledger writes the demo agent's keypair, relative to the workspace root. */
const LOCAL_AGENT_KEYPAIR = join('.data', 'ledger', 'keys', 'agent.json');

/** Usage text of `agent-pay`. */
export const USAGE = `Usage: agent-pay <url> [options]
       agent-pay verify-receipt <file> [body] [--jwks <file>] [--json]

Calls an x402-paid URL. On 402 it pays the advertised USDC amount on Solana and retries: with the
official x402 exact scheme when the server offers it (PAYMENT-REQUIRED; the server pays the network
fee, the wallet needs no SOL), else in push mode (the wallet sends the transfer and pays the fee, then
retries with X-PAYMENT).

Options:
  --keypair <path>      Solana CLI keypair file (JSON array of 64 bytes). Default: $AGENT_KEYPAIR,
                        else ${LOCAL_AGENT_KEYPAIR} found from the current directory upwards
  --rpc <url>           RPC of network "solana". Default: $SOLANA_RPC_URL or ${DEFAULT_RPC_URL}
  --devnet-rpc <url>    RPC of network "solana-devnet". Default: $SOLANA_DEVNET_RPC_URL or ${DEFAULT_DEVNET_RPC_URL}
  --method <GET|POST>   HTTP method. Default: GET, or POST when --data is given
  --data <json>         JSON request body (sent with content-type application/json)
  --max-amount <usdc>   Per-payment spend cap in USDC (decimal, e.g. 0.5 or 25); a higher price is
                        refused before anything is signed. Default: ${usdcArgument(DEFAULT_MAX_AMOUNT_ATOMIC)} USDC.
                        The compute endpoints (forge/ideate 15 USDC, prove/debate 25 USDC) need --max-amount 25
  --push                Pay in push mode even when the server offers the official scheme
  --wait                When the answer starts a compute job (202 with a jobId), follow it to its end
                        with a progress bar and print its result (a debate's verdict)
  --receipts <dir>      Keep the paid answer's signed receipt, checked against the service's
                        /.well-known/jwks.json and the body: <dir>/<transaction>.json and .body
  --json                Print one JSON object instead of text
  -h, --help            Show this help

verify-receipt checks a kept receipt offline: its signature against the keys kept in <file> (or
--jwks <file>, the service's JWKS archived apart) and, with [body], that body's SHA-256.

Exit codes: 0 2xx answer (with --wait: the job completed); 1 non-2xx answer; 2 usage error; 3 insufficient
funds; 4 RPC unreachable; 5 payment not completed (price above --max-amount, refused, failed, not
confirmed); 6 the URL cannot be reached; 7 --wait: the job failed or could not be followed to its end;
8 verify-receipt: the receipt does not check.`;

/** Parsed command line of `agent-pay`. */
export interface AgentPayOptions {
  /** The URL to call. */
  url: string;
  /** Path of the keypair file. */
  keypairPath: string;
  /** RPC URL per network. */
  rpcUrls: { solana: string; 'solana-devnet': string };
  /** HTTP method. */
  method: 'GET' | 'POST';
  /** JSON body text, when given. */
  data: string | undefined;
  /** Per-payment spend cap in atomic USDC units (`--max-amount` × 10^6; default 1 USDC = 1,000,000). */
  maxAmountAtomic: bigint;
  /** `push` with `--push`, else `auto` (the official scheme when offered). */
  mode: 'auto' | 'push';
  /** Machine-readable output. */
  json: boolean;
  /** Follow the compute job the answer starts to its end (`--wait`). */
  wait: boolean;
  /** Directory where the paid answer's receipt and body are kept (`--receipts`). */
  receiptsDir: string | undefined;
}

/** Parsed command line of `agent-pay verify-receipt`. */
export interface VerifyReceiptOptions {
  command: 'verify-receipt';
  /** The receipt file (`--receipts` wrote it). */
  file: string;
  /** The body file, when its SHA-256 is to be checked. */
  body: string | undefined;
  /** A JWKS file to check against instead of the keys kept in `file`. */
  jwks: string | undefined;
  json: boolean;
}

/** A command-line mistake: printed with the usage, exit code 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/**
 * Parses `agent-pay` arguments (`verify-receipt` first: {@link VerifyReceiptOptions}).
 *
 * @param argv arguments after the program name
 * @param env environment (AGENT_KEYPAIR, SOLANA_RPC_URL, SOLANA_DEVNET_RPC_URL)
 * @param cwd directory to search the local agent keypair from
 * @returns the options, or `"help"` for `--help`
 * @throws UsageError for missing or invalid arguments
 */
export function parseAgentPayArgs(
  argv: string[],
  env: NodeJS.ProcessEnv,
  cwd: string,
): AgentPayOptions | VerifyReceiptOptions | 'help' {
  if (argv[0] === 'verify-receipt') return parseVerifyReceiptArgs(argv.slice(1), cwd);
  const parsed = parseOrUsage({
    args: argv,
    allowPositionals: true,
    options: {
      keypair: { type: 'string' },
      rpc: { type: 'string' },
      'devnet-rpc': { type: 'string' },
      method: { type: 'string' },
      data: { type: 'string' },
      'max-amount': { type: 'string' },
      push: { type: 'boolean', default: false },
      json: { type: 'boolean', default: false },
      wait: { type: 'boolean', default: false },
      receipts: { type: 'string' },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  const [url, ...extra] = positionals;
  if (!url) throw new UsageError('missing <url>');
  if (extra.length > 0) throw new UsageError(`unexpected argument ${extra[0]}`);
  try {
    new URL(url);
  } catch {
    throw new UsageError(`not a URL: ${url}`);
  }
  const method = (values.method ?? (values.data === undefined ? 'GET' : 'POST')).toUpperCase();
  if (method !== 'GET' && method !== 'POST')
    throw new UsageError(`--method must be GET or POST, got ${values.method}`);
  if (values.data !== undefined) {
    try {
      JSON.parse(values.data);
    } catch {
      throw new UsageError('--data must be JSON');
    }
  }
  let maxAmountAtomic = DEFAULT_MAX_AMOUNT_ATOMIC;
  if (values['max-amount'] !== undefined) {
    try {
      maxAmountAtomic = parseUsdc(values['max-amount']);
    } catch {
      throw new UsageError(
        `--max-amount must be an amount of USDC with at most 6 decimals (e.g. 25 or 0.5), got ${values['max-amount']}`,
      );
    }
  }
  return {
    url,
    keypairPath:
      values.keypair ??
      nonBlank(env.AGENT_KEYPAIR) ??
      findUpwards(cwd, LOCAL_AGENT_KEYPAIR) ??
      resolve(cwd, LOCAL_AGENT_KEYPAIR),
    rpcUrls: {
      solana: values.rpc ?? nonBlank(env.SOLANA_RPC_URL) ?? DEFAULT_RPC_URL,
      'solana-devnet': values['devnet-rpc'] ?? nonBlank(env.SOLANA_DEVNET_RPC_URL) ?? DEFAULT_DEVNET_RPC_URL,
    },
    method,
    data: values.data,
    maxAmountAtomic,
    mode: values.push ? 'push' : 'auto',
    json: values.json ?? false,
    wait: values.wait ?? false,
    receiptsDir: values.receipts === undefined ? undefined : resolve(cwd, values.receipts),
  };
}

/**
 * Parses `agent-pay verify-receipt <file> [body] [--jwks <file>] [--json]`.
 * @throws UsageError for a missing file or an unknown option
 */
function parseVerifyReceiptArgs(argv: string[], cwd: string): VerifyReceiptOptions | 'help' {
  const parsed = parseOrUsage({
    args: argv,
    allowPositionals: true,
    options: {
      jwks: { type: 'string' },
      json: { type: 'boolean', default: false },
      help: { type: 'boolean', short: 'h', default: false },
    },
  });
  const { values, positionals } = parsed;
  if (values.help) return 'help';
  const [file, body, ...extra] = positionals;
  if (!file) throw new UsageError('verify-receipt: missing <file>');
  if (extra.length > 0) throw new UsageError(`verify-receipt: unexpected argument ${extra[0]}`);
  return {
    command: 'verify-receipt',
    file: resolve(cwd, file),
    body: body === undefined ? undefined : resolve(cwd, body),
    jwks: values.jwks === undefined ? undefined : resolve(cwd, values.jwks),
    json: values.json ?? false,
  };
}

/** `parseArgs` of `config`, its refusal a {@link UsageError}. */
function parseOrUsage<T extends ParseArgsConfig>(config: T): ReturnType<typeof parseArgs<T>> {
  try {
    return parseArgs(config);
  } catch (error) {
    throw new UsageError(error instanceof Error ? error.message : String(error));
  }
}

function nonBlank(value: string | undefined): string | undefined {
  return value !== undefined && value.trim() !== '' ? value : undefined;
}

function findUpwards(start: string, relative: string): string | undefined {
  let dir = resolve(start);
  for (;;) {
    const candidate = join(dir, relative);
    if (existsSync(candidate)) return candidate;
    const parent = dirname(dir);
    if (parent === dir) return undefined;
    dir = parent;
  }
}

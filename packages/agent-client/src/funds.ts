import { DEFAULT_RPC_URL } from './options';
import { formatUsdc, usdcArgument, wholeUsdcCovering } from './usdc';

/** The network an x402 payment is made on, as this project names it. */
export type PaymentNetwork = 'solana' | 'solana-devnet';

/** What was known when a payment failed for lack of funds. */
export interface ShortfallInput {
  /** What is missing: the token account, tokens, or SOL for the fee (push mode). */
  kind: 'no_token_account' | 'token_balance' | 'sol_for_fees';
  /** The paying wallet (base58). */
  wallet: string;
  /** The network of the payment, when known. */
  network: PaymentNetwork | undefined;
  /** The RPC URL the payment went through, when known. */
  rpcUrl: string | undefined;
  /** The mint paid in (base58), when known. */
  asset: string | undefined;
  /** The price, in atomic USDC units, when known. */
  priceAtomic: bigint | undefined;
  /** The wallet's USDC balance in atomic units (0 without a token account), when known. */
  balanceAtomic: bigint | undefined;
  /** The wallet's SOL in lamports (kind `sol_for_fees`), when known. */
  lamports: bigint | undefined;
}

/** The explanation of a shortfall: one line for people, and the same facts for `--json`. */
export interface Shortfall {
  /** One line, without the `agent-pay: ` prefix. */
  message: string;
  /** For `--json`: amounts in USDC (decimal strings) and atomic units (strings), and how to fund. */
  details: {
    kind: ShortfallInput['kind'];
    wallet: string;
    network: PaymentNetwork | null;
    asset: string | null;
    price: string | null;
    priceAtomic: string | null;
    balance: string | null;
    balanceAtomic: string | null;
    /** Set on the local ledger: the command that funds the wallet. */
    fundCommand: string | null;
  };
}

/**
 * Says what is missing and how to fix it (packages/agent-client/README.md, "Not enough funds"): the
 * balance and the price in USDC, then, on the local ledger, the `pnpm ledger fund` command that
 * covers the shortfall (whole USDC, at least 1; it also airdrops SOL), and elsewhere the wallet
 * address to send USDC (or SOL) to.
 * @param localLedger whether `rpcUrl` is this project's local ledger (see {@link isLocalLedger})
 */
export function describeShortfall(input: ShortfallInput, localLedger: boolean): Shortfall {
  const { kind, wallet, network, rpcUrl, priceAtomic, balanceAtomic } = input;
  const price = priceAtomic === undefined ? undefined : formatUsdc(priceAtomic);
  const balance =
    balanceAtomic === undefined ? (kind === 'no_token_account' ? 0n : undefined) : balanceAtomic;
  const on = network ? ` on ${network}` : '';
  const shortfall = priceAtomic !== undefined && balance !== undefined ? priceAtomic - balance : undefined;

  let what: string;
  if (kind === 'sol_for_fees') {
    const sol = input.lamports === undefined ? '' : `balance ${formatSol(input.lamports)} SOL, `;
    what = `${sol}not enough SOL for the network fee of a push-mode payment${on}`;
  } else {
    const parts = [
      balance === undefined ? undefined : `balance ${formatUsdc(balance)} USDC`,
      price === undefined ? undefined : `price ${price} USDC`,
    ].filter((part): part is string => part !== undefined);
    // `pnpm ledger fund` funds every network of the ledger: the network goes without saying there.
    const where = localLedger ? '' : on;
    what = parts.length > 0 ? `${parts.join(', ')}${where}` : `not enough USDC${where}`;
  }

  let fix: string;
  let fundCommand: string | null = null;
  if (localLedger) {
    const amount = usdcArgument(wholeUsdcCovering(shortfall ?? 0n) * 1_000_000n);
    const base = rpcUrl ? ledgerBaseUrl(rpcUrl) : DEFAULT_RPC_URL;
    fundCommand = `pnpm ledger fund ${wallet} ${amount}${base === DEFAULT_RPC_URL ? '' : ` --rpc ${base}`}`;
    fix = `fund it with: ${fundCommand}`;
  } else if (kind === 'sol_for_fees') {
    fix = `send SOL to wallet ${wallet}, or pay without --push (the server pays the fee)`;
  } else {
    const atLeast = shortfall !== undefined && shortfall > 0n ? `at least ${formatUsdc(shortfall)} ` : '';
    fix = `send ${atLeast}USDC to wallet ${wallet}`;
  }
  return {
    message: `insufficient funds: ${what}; ${fix}`,
    details: {
      kind,
      wallet,
      network: network ?? null,
      asset: input.asset ?? null,
      price: price ?? null,
      priceAtomic: priceAtomic?.toString() ?? null,
      balance: balance === undefined ? null : formatUsdc(balance),
      balanceAtomic: balance?.toString() ?? null,
      fundCommand,
    },
  };
}

/**
 * Whether `rpcUrl` is this project's local ledger (`@repo/solana-localnet`): it answers the
 * ledger-only JSON-RPC method `localnet_info` (a cluster answers -32601), and, when `asset` is given,
 * reports that mint as its test USDC. Never throws: an unreachable or slow endpoint (over
 * `timeoutMs`, default 2000 ms) is not the local ledger.
 */
export async function isLocalLedger(
  rpcUrl: string,
  asset: string | undefined,
  fetchImpl: typeof fetch = fetch,
  timeoutMs = 2000,
): Promise<boolean> {
  try {
    const response = await fetchImpl(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'localnet_info', params: [] }),
      signal: AbortSignal.timeout(timeoutMs),
    });
    if (!response.ok) return false;
    const body = (await response.json()) as { result?: { mint?: unknown } };
    const mint = body.result?.mint;
    return typeof mint === 'string' && (asset === undefined || mint === asset);
  } catch {
    return false;
  }
}

/** The ledger's base URL (what `pnpm ledger fund --rpc` takes) from a network's RPC URL. */
function ledgerBaseUrl(rpcUrl: string): string {
  return rpcUrl.replace(/\/+$/, '').replace(/\/devnet$/, '');
}

function formatSol(lamports: bigint): string {
  const whole = lamports / 1_000_000_000n;
  const fraction = (lamports % 1_000_000_000n).toString().padStart(9, '0').replace(/0+$/, '');
  return fraction === '' ? whole.toString() : `${whole}.${fraction}`;
}

import {
  AddressLookupTableAccount,
  AddressLookupTableProgram,
  ComputeBudgetProgram,
  Connection,
  Keypair,
  LAMPORTS_PER_SOL,
  PublicKey,
  Transaction,
  type SignatureStatus,
  type TransactionInstruction,
} from '@solana/web3.js';
import {
  MINT_SIZE,
  createAssociatedTokenAccountIdempotentInstruction,
  createMintToInstruction,
  createTransferCheckedInstruction,
  getAssociatedTokenAddressSync,
} from './deps';
import type { FundResult } from './ledger';
import { createMintInstructions } from './mint-instructions';
import { RpcError } from './rpc-error';
import type { LocalnetNetworkInfo } from './server';

/**
 * `localnet_info` answer of one network path: where it is served and its well-known accounts (the
 * {@link LocalnetNetworkInfo} a started ledger reports), its wallets and its genesis hash. All
 * addresses base58.
 */
export interface LocalnetRpcInfo extends LocalnetNetworkInfo {
  agent: string;
  /** Path of the agent's Solana CLI keypair file on the ledger's machine. */
  agentKeypairPath: string;
  /** The x402 fee payer (`extra.feePayer`): SOL only, never a token account; the same on both networks. */
  feePayer: string;
  /** Path of the fee payer's Solana CLI keypair file on the ledger's machine (`X402_FEE_PAYER_KEYPAIR`). */
  feePayerKeypairPath: string;
  /** The refund wallet (SOL and test USDC, the same on both networks): market-intel's `X402_REFUND_KEYPAIR`. */
  refundWallet: string;
  /** Path of the refund wallet's Solana CLI keypair file on the ledger's machine. */
  refundKeypairPath: string;
  genesisHash: string;
}

/**
 * Calls one JSON-RPC method over HTTP POST and returns its `result`.
 * @throws RpcError with the server's code/message/data when it answers an error
 * @throws Error (`cause` set) when the endpoint cannot be reached
 */
export async function callRpc<T>(rpcUrl: string, method: string, params: unknown[] = []): Promise<T> {
  let response: Response;
  try {
    response = await fetch(rpcUrl, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }),
    });
  } catch (error) {
    throw new Error(`cannot reach the Solana RPC at ${rpcUrl}`, { cause: error });
  }
  if (!response.ok) throw new Error(`${rpcUrl} answered HTTP ${response.status} to ${method}`);
  const body = (await response.json()) as {
    result?: T;
    error?: { code: number; message: string; data?: unknown };
  };
  if (body.error !== undefined) throw new RpcError(body.error.code, body.error.message, body.error.data);
  return body.result as T;
}

/**
 * Funds `owner` through the ledger's `localnet_fund` extension: `lamports` SOL (default 10 SOL), its
 * associated token account for the network's test mint, and `usdcAtomic` atomic units (default
 * 1000 USDC).
 * @throws RpcError when the ledger rejects it; Error when the ledger is unreachable
 */
export async function fundWallet(args: {
  rpcUrl: string;
  owner: string;
  usdcAtomic?: bigint;
  lamports?: number;
}): Promise<FundResult> {
  const options: { usdc?: string; lamports?: number } = {};
  if (args.usdcAtomic !== undefined) options.usdc = args.usdcAtomic.toString();
  if (args.lamports !== undefined) options.lamports = args.lamports;
  return callRpc<FundResult>(args.rpcUrl, 'localnet_fund', [args.owner, options]);
}

/** The network's mint, merchant accounts and agent, from the ledger's `localnet_info` extension. */
export async function getLocalnetInfo(rpcUrl: string): Promise<LocalnetRpcInfo> {
  return callRpc<LocalnetRpcInfo>(rpcUrl, 'localnet_info');
}

/**
 * Polls `getSignatureStatuses` until `signature` has a status (landed, successfully or not).
 * @param timeoutMs deadline in milliseconds (default 10 000)
 * @returns the status; check `err` for failed transactions
 * @throws Error when the deadline passes first
 */
export async function waitForSignature(
  connection: Connection,
  signature: string,
  timeoutMs = 10_000,
): Promise<SignatureStatus> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const { value } = await connection.getSignatureStatuses([signature]);
    const status = value[0];
    if (status !== null && status !== undefined) return status;
    if (Date.now() > deadline)
      throw new Error(`transaction ${signature} did not land within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

async function sendInstructions(
  connection: Connection,
  instructions: TransactionInstruction[],
  signers: Keypair[],
  skipPreflight = false,
): Promise<string> {
  const [feePayer] = signers;
  if (feePayer === undefined) throw new Error('at least one signer (the fee payer) is required');
  const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
  const tx = new Transaction({ feePayer: feePayer.publicKey, blockhash, lastValidBlockHeight }).add(
    ...instructions,
  );
  tx.sign(...signers);
  return connection.sendRawTransaction(tx.serialize(), { skipPreflight });
}

/** Arguments of {@link sendUsdcTransfer}. Amounts are atomic units. */
export interface UsdcTransferArgs {
  rpcUrl: string;
  /** Fee payer and transfer authority (owner of the source token account). */
  payer: Keypair;
  /** Mint named in the `transferChecked` instruction (base58). */
  mint: string;
  /** Recipient token account (base58), e.g. the merchant's `payTo`. */
  destinationTokenAccount: string;
  amountAtomic: bigint;
  /** Decimals named in the instruction; default 6. */
  decimals?: number;
  /** Source token account; default the payer's associated token account for `mint`. */
  sourceTokenAccount?: string;
  /**
   * Send with `skipPreflight`, so a transaction that fails in execution lands with `meta.err` set
   * (fee charged) instead of being rejected. Default false.
   */
  skipPreflight?: boolean;
  /**
   * Adds ComputeBudget instructions (a 20 000 CU limit and this price in micro-lamports per CU), as a
   * wallet's priority fee does. Two equal transfers from one payer on one blockhash are otherwise the
   * same transaction; a distinct price makes each unique. Only for ledgers in another process: the
   * extra program run trips litesvm's x87 bug in-process (see `spawnLocalnet`). Default: none.
   */
  computeUnitPriceMicroLamports?: number;
  /** Wait until the transaction has a signature status (polling, 10 s deadline). Default true. */
  waitForLanding?: boolean;
}

/**
 * Builds, signs and sends an SPL `transferChecked` of `amountAtomic` from the payer's token account to
 * `destinationTokenAccount`: the x402 payment a client makes. Any values can be passed on purpose
 * (wrong mint, wrong recipient, too much) to produce bad payments.
 * @returns the transaction signature (base58); it has landed unless `waitForLanding` is false
 * @throws SendTransactionError when preflight rejects it (e.g. insufficient funds without skipPreflight);
 * Error when it does not land in time
 */
export async function sendUsdcTransfer(args: UsdcTransferArgs): Promise<string> {
  const connection = new Connection(args.rpcUrl, 'confirmed');
  const mint = new PublicKey(args.mint);
  const source =
    args.sourceTokenAccount !== undefined
      ? new PublicKey(args.sourceTokenAccount)
      : getAssociatedTokenAddressSync(mint, args.payer.publicKey, true);
  const budget =
    args.computeUnitPriceMicroLamports === undefined
      ? []
      : [
          ComputeBudgetProgram.setComputeUnitLimit({ units: 20_000 }),
          ComputeBudgetProgram.setComputeUnitPrice({ microLamports: args.computeUnitPriceMicroLamports }),
        ];
  const instruction = createTransferCheckedInstruction(
    source,
    mint,
    new PublicKey(args.destinationTokenAccount),
    args.payer.publicKey,
    args.amountAtomic,
    args.decimals ?? 6,
  );
  const signature = await sendInstructions(
    connection,
    [...budget, instruction],
    [args.payer],
    args.skipPreflight ?? false,
  );
  if (args.waitForLanding ?? true) await waitForSignature(connection, signature);
  return signature;
}

/**
 * Creates a new SPL mint with real transactions through any RPC that supports `requestAirdrop`
 * (the mint authority is airdropped 1 SOL to pay). Use it for a "wrong mint" with the same decimals
 * as the test USDC.
 * @returns the mint address and its authority keypair (needed by {@link mintTestTokens})
 * @throws Error / SendTransactionError when a transaction fails or does not land in time
 */
export async function createTestMint(args: {
  rpcUrl: string;
  decimals?: number;
}): Promise<{ mint: string; mintAuthority: Keypair }> {
  const connection = new Connection(args.rpcUrl, 'confirmed');
  const mintAuthority = Keypair.generate();
  const mint = Keypair.generate();
  await waitForSignature(
    connection,
    await connection.requestAirdrop(mintAuthority.publicKey, LAMPORTS_PER_SOL),
  );
  const rent = await connection.getMinimumBalanceForRentExemption(MINT_SIZE);
  const signature = await sendInstructions(
    connection,
    createMintInstructions({
      payer: mintAuthority.publicKey,
      mint: mint.publicKey,
      decimals: args.decimals ?? 6,
      mintAuthority: mintAuthority.publicKey,
      rentLamports: rent,
    }),
    [mintAuthority, mint],
  );
  await waitForSignature(connection, signature);
  return { mint: mint.publicKey.toBase58(), mintAuthority };
}

/**
 * Creates `owner`'s associated token account for `mint` if missing and mints `amountAtomic` to it,
 * paid and signed by `mintAuthority` (from {@link createTestMint}).
 * @returns the token account (base58) and the transaction signature
 * @throws Error / SendTransactionError when the transaction fails or does not land in time
 */
export async function mintTestTokens(args: {
  rpcUrl: string;
  mint: string;
  mintAuthority: Keypair;
  owner: string;
  amountAtomic: bigint;
}): Promise<{ tokenAccount: string; signature: string }> {
  const connection = new Connection(args.rpcUrl, 'confirmed');
  const mint = new PublicKey(args.mint);
  const owner = new PublicKey(args.owner);
  const tokenAccount = getAssociatedTokenAddressSync(mint, owner, true);
  const authority = args.mintAuthority.publicKey;
  const signature = await sendInstructions(
    connection,
    [
      createAssociatedTokenAccountIdempotentInstruction(authority, tokenAccount, owner, mint),
      createMintToInstruction(mint, tokenAccount, authority, args.amountAtomic),
    ],
    [args.mintAuthority],
  );
  await waitForSignature(connection, signature);
  return { tokenAccount: tokenAccount.toBase58(), signature };
}

/**
 * A lookup table as web3.js compiles v0 messages with it: `key` holding `addresses`, never
 * deactivated. Whatever the ledger holds at `key` (nothing, another program's account, another
 * table), a message compiled with it names `key` and the indexes of `addresses`: for tests of tables
 * that do not hold what a transaction claims.
 */
export function lookupTableAccount(key: PublicKey, addresses: PublicKey[]): AddressLookupTableAccount {
  return new AddressLookupTableAccount({
    key,
    state: {
      deactivationSlot: BigInt('18446744073709551615'),
      lastExtendedSlot: 0,
      lastExtendedSlotStartIndex: 0,
      addresses,
    },
  });
}

/**
 * Creates an address lookup table holding `addresses` (base58, at most about 20: they are added in the
 * creating transaction) through any RPC that supports `requestAirdrop` (its authority is airdropped
 * 1 SOL to pay), created with `recentSlot: 0`, the only slot in the local ledger's SlotHashes.
 * @returns the table's address (base58), its authority keypair (needed by
 *   {@link deactivateLookupTable}) and the table as web3.js reads it back from the ledger (`account`,
 *   to compile v0 messages with)
 * @throws Error / SendTransactionError when a transaction fails or does not land in time
 */
export async function createLookupTable(args: {
  rpcUrl: string;
  addresses: string[];
}): Promise<{ table: string; authority: Keypair; account: AddressLookupTableAccount }> {
  const connection = new Connection(args.rpcUrl, 'confirmed');
  const authority = Keypair.generate();
  await waitForSignature(connection, await connection.requestAirdrop(authority.publicKey, LAMPORTS_PER_SOL));
  const [create, table] = AddressLookupTableProgram.createLookupTable({
    authority: authority.publicKey,
    payer: authority.publicKey,
    recentSlot: 0,
  });
  const extend = AddressLookupTableProgram.extendLookupTable({
    lookupTable: table,
    authority: authority.publicKey,
    payer: authority.publicKey,
    addresses: args.addresses.map((address) => new PublicKey(address)),
  });
  await waitForSignature(connection, await sendInstructions(connection, [create, extend], [authority]));
  const account = (await connection.getAddressLookupTable(table)).value;
  if (!account) throw new Error(`the lookup table ${table.toBase58()} was not found after it landed`);
  return { table: table.toBase58(), authority, account };
}

/**
 * Deactivates a lookup table made by {@link createLookupTable}: from the next slot on, the local
 * ledger (whose SlotHashes holds only slot 0) treats it as deactivated and refuses transactions that
 * use it, as a cluster does once the deactivation slot has left its SlotHashes.
 * @throws Error / SendTransactionError when the transaction fails or does not land in time
 */
export async function deactivateLookupTable(args: {
  rpcUrl: string;
  table: string;
  authority: Keypair;
}): Promise<void> {
  const connection = new Connection(args.rpcUrl, 'confirmed');
  const deactivate = AddressLookupTableProgram.deactivateLookupTable({
    lookupTable: new PublicKey(args.table),
    authority: args.authority.publicKey,
  });
  await waitForSignature(connection, await sendInstructions(connection, [deactivate], [args.authority]));
}

import { randomInt } from 'node:crypto';
import { ComputeBudgetProgram, Connection, Keypair, PublicKey, Transaction } from '@solana/web3.js';
import { waitForSignature } from './client';
import { bs58, createTransferCheckedInstruction, getAssociatedTokenAddressSync } from './deps';
import type { LocalnetNetwork } from './ledger';
import type { Localnet } from './server';

/** What a test may change about a {@link signedPayment}: all addresses base58. */
export interface TestPaymentOverrides {
  /** Transfer authority and fee payer; default the localnet's agent. */
  payer?: Keypair;
  /** Mint named in the `transferChecked`; default the network's test USDC. */
  mint?: string;
  /** Receiving token account; default the merchant's token account (the v1 `payTo`). */
  destination?: string;
  /** Solana Pay references: added to the `transferChecked` as read-only, non-signer accounts. */
  references?: string[];
}

/**
 * A signed, not yet sent `transferChecked` of `amountAtomic` (atomic units, 6 decimals) on a running
 * localnet, as a push-mode x402 client makes it. A random compute-unit limit (40,000 to 59,999) makes
 * two equal payments two distinct transactions, so the signature is known before it lands.
 *
 * @returns the signature (base58) and `send`, which sends it (with `skipPreflight` when asked, so a
 *   failing transfer lands with `meta.err`) and waits until it lands
 * @throws Error from the RPC when the blockhash cannot be fetched
 */
export async function signedPayment(
  localnet: Localnet,
  network: LocalnetNetwork,
  amountAtomic: bigint,
  overrides: TestPaymentOverrides = {},
): Promise<{ signature: string; send: (skipPreflight?: boolean) => Promise<void> }> {
  const info = localnet.networks[network];
  const connection = new Connection(info.rpcUrl, 'confirmed');
  const payer = overrides.payer ?? localnet.agent.keypair;
  const mint = new PublicKey(overrides.mint ?? info.mint);
  const destination = new PublicKey(overrides.destination ?? info.merchantTokenAccount);
  const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
  const transfer = createTransferCheckedInstruction(
    getAssociatedTokenAddressSync(mint, payer.publicKey),
    mint,
    destination,
    payer.publicKey,
    amountAtomic,
    6,
  );
  for (const reference of overrides.references ?? []) {
    transfer.keys.push({ pubkey: new PublicKey(reference), isSigner: false, isWritable: false });
  }
  const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(
    ComputeBudgetProgram.setComputeUnitLimit({ units: 40_000 + randomInt(20_000) }),
    transfer,
  );
  tx.sign(payer);
  if (!tx.signature) throw new Error('the payment transaction was not signed');
  const signature = bs58.encode(tx.signature);
  return {
    signature,
    send: async (skipPreflight = false) => {
      await connection.sendRawTransaction(tx.serialize(), { skipPreflight });
      await waitForSignature(connection, signature);
    },
  };
}

/**
 * Pays `amountAtomic` with {@link signedPayment} and waits until it lands.
 *
 * @param overrides.skipPreflight send even if it will fail, so it lands with `meta.err` set
 * @returns the transaction signature (base58)
 */
export async function payUsdc(
  localnet: Localnet,
  network: LocalnetNetwork,
  amountAtomic: bigint,
  overrides: TestPaymentOverrides & { skipPreflight?: boolean } = {},
): Promise<string> {
  const payment = await signedPayment(localnet, network, amountAtomic, overrides);
  await payment.send(overrides.skipPreflight ?? false);
  return payment.signature;
}

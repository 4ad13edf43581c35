import { ComputeBudgetProgram, Connection, Keypair, PublicKey, Transaction } from '@solana/web3.js';
import { spawnLocalnet, waitForSignature, type Localnet } from '@repo/solana-localnet';
import type { X402Network } from '@repo/schemas';
import { computeUnitLimit } from '../../src/client/pay';
import { createTransferCheckedInstruction, getAssociatedTokenAddressSync } from '../../src/deps';
import { bs58 } from '../../src/deps';

export type { Localnet };

/** Starts an in-memory local ledger on a free port, in a child process (litesvm must not share ours). */
export function startTestLocalnet(): Promise<Localnet> {
  return spawnLocalnet({ port: 0 });
}

/**
 * Pays `amountAtomic` of the network's USDC (or `mint`) from `payer` (default: the agent) to
 * `destination` (default: payTo), like a client would, and waits until it lands.
 * @param overrides.skipPreflight send even if it will fail, so it lands with meta.err
 */
export async function payUsdc(
  localnet: Localnet,
  network: X402Network,
  amountAtomic: bigint,
  overrides: { payer?: Keypair; mint?: string; destination?: string; skipPreflight?: boolean } = {},
): Promise<string> {
  const payment = await signedPayment(localnet, network, amountAtomic, overrides);
  await payment.send(overrides.skipPreflight ?? false);
  return payment.signature;
}

/**
 * A signed, not yet sent USDC payment (a unique compute-unit limit makes equal payments distinct): its
 * signature is known before it lands.
 * @returns the signature and a function that sends it and waits until it lands
 */
export async function signedPayment(
  localnet: Localnet,
  network: X402Network,
  amountAtomic: bigint,
  overrides: { payer?: Keypair; mint?: string; destination?: string } = {},
): Promise<{ signature: string; send: (skipPreflight?: boolean) => Promise<void> }> {
  const info = localnet.networks[network];
  const connection = new Connection(info.rpcUrl, 'confirmed');
  const payer = overrides.payer ?? localnet.agent.keypair;
  const mint = new PublicKey(overrides.mint ?? info.mint);
  const destination = new PublicKey(overrides.destination ?? info.merchantTokenAccount);
  const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
  const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(
    ComputeBudgetProgram.setComputeUnitLimit({ units: computeUnitLimit() }),
    createTransferCheckedInstruction(
      getAssociatedTokenAddressSync(mint, payer.publicKey),
      mint,
      destination,
      payer.publicKey,
      amountAtomic,
      6,
    ),
  );
  tx.sign(payer);
  if (!tx.signature) throw new Error('unsigned');
  const signature = bs58.encode(tx.signature);
  return {
    signature,
    send: async (skipPreflight = false) => {
      await connection.sendRawTransaction(tx.serialize(), { skipPreflight });
      await waitForSignature(connection, signature);
    },
  };
}

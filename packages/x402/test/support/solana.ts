import { Connection, Keypair, PublicKey, Transaction } from '@solana/web3.js';
import { sendUsdcTransfer, startLocalnet, waitForSignature, type Localnet } from '@repo/solana-localnet';
import type { X402Network } from '@repo/schemas';
import { associatedTokenAddress, transferCheckedInstruction } from '../../src/client/token';
import { base58Encode } from '../../src/base58';

export type { Localnet };

/** Starts an in-memory local ledger on a free port. */
export function startTestLocalnet(): Promise<Localnet> {
  return startLocalnet({ port: 0 });
}

/** Pays `amountAtomic` of the network's USDC (or `mint`) from `payer` (default: the agent) to `destination` (default: payTo). */
export function payUsdc(
  localnet: Localnet,
  network: X402Network,
  amountAtomic: bigint,
  overrides: { payer?: Keypair; mint?: string; destination?: string; skipPreflight?: boolean } = {},
): Promise<string> {
  const info = localnet.networks[network];
  return sendUsdcTransfer({
    rpcUrl: info.rpcUrl,
    payer: overrides.payer ?? localnet.agent.keypair,
    mint: overrides.mint ?? info.mint,
    destinationTokenAccount: overrides.destination ?? info.merchantTokenAccount,
    amountAtomic,
    ...(overrides.skipPreflight ? { skipPreflight: true } : {}),
  });
}

/**
 * A signed, not yet sent USDC payment: its signature is known before it lands.
 * @returns the signature and a function that sends it and waits until it lands
 */
export async function signedUnsentPayment(
  localnet: Localnet,
  network: X402Network,
  amountAtomic: bigint,
): Promise<{ signature: string; send: () => Promise<void> }> {
  const info = localnet.networks[network];
  const connection = new Connection(info.rpcUrl, 'confirmed');
  const payer = localnet.agent.keypair;
  const mint = new PublicKey(info.mint);
  const { blockhash, lastValidBlockHeight } = await connection.getLatestBlockhash();
  const tx = new Transaction({ feePayer: payer.publicKey, blockhash, lastValidBlockHeight }).add(
    transferCheckedInstruction(associatedTokenAddress(mint, payer.publicKey), mint, new PublicKey(info.merchantTokenAccount), payer.publicKey, amountAtomic, 6),
  );
  tx.sign(payer);
  if (!tx.signature) throw new Error('unsigned');
  const signature = base58Encode(tx.signature);
  return {
    signature,
    send: async () => {
      await connection.sendRawTransaction(tx.serialize());
      await waitForSignature(connection, signature);
    },
  };
}

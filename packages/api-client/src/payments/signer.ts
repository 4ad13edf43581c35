// Who pays (README, "Paying within limits"): a keypair file, a Keypair, or a wallet adapter that signs
// transactions, turned into the two signers the schemes need.
import {
  address,
  getTransactionEncoder,
  type SignatureBytes,
  type Transaction as KitTransaction,
  type TransactionPartialSigner,
  type TransactionSigner,
  createKeyPairSignerFromBytes,
} from '@solana/kit';
import { Keypair, type PublicKey, type Transaction, VersionedTransaction } from '@solana/web3.js';

/**
 * A wallet that signs transactions without revealing its key, shaped like a Solana wallet adapter
 * (`@solana/wallet-adapter-base`'s `signTransaction`): it receives a web3.js v1 transaction and answers
 * it signed by `publicKey`.
 */
export interface WalletAdapterSigner {
  /** The wallet's address. */
  publicKey: PublicKey;
  /** Signs a transaction (a legacy `Transaction` or a `VersionedTransaction`) and answers it. */
  signTransaction<T extends Transaction | VersionedTransaction>(transaction: T): Promise<T>;
}

/**
 * Who pays: the path of a Solana CLI keypair file (a JSON array of 64 bytes), a web3.js `Keypair`,
 * or a {@link WalletAdapterSigner}.
 */
export type Signer = string | Keypair | WalletAdapterSigner;

/** A {@link Signer} resolved once: its address and what each scheme signs with. */
export interface ResolvedSigner {
  /** The paying wallet's address (base58). */
  address: string;
  /** The keypair, when the signer holds one (push mode signs with it). */
  keypair: Keypair | undefined;
  /** The adapter, when the signer is one. */
  adapter: WalletAdapterSigner | undefined;
  /** The `@solana/kit` signer the official `@x402/svm` client signs with. */
  kitSigner(): Promise<TransactionSigner>;
}

/**
 * Resolves a {@link Signer} whose keypair file, if any, was read into its 64 bytes.
 * @throws Error when the bytes are not a valid secret key
 */
export function resolveSigner(signer: Uint8Array | Keypair | WalletAdapterSigner): ResolvedSigner {
  if (signer instanceof Uint8Array) return fromKeypair(Keypair.fromSecretKey(signer));
  if (signer instanceof Keypair) return fromKeypair(signer);
  if (isKeypairLike(signer)) return fromKeypair(Keypair.fromSecretKey(signer.secretKey));
  const adapter = signer;
  const kit: TransactionPartialSigner = {
    address: address(adapter.publicKey.toBase58()),
    async signTransactions(transactions: readonly KitTransaction[]) {
      const encoder = getTransactionEncoder();
      const out: Record<string, SignatureBytes>[] = [];
      for (const transaction of transactions) {
        const wire = encoder.encode(transaction);
        const signed = await adapter.signTransaction(VersionedTransaction.deserialize(Uint8Array.from(wire)));
        const keys = signed.message.staticAccountKeys;
        const index = keys.findIndex((key) => key.equals(adapter.publicKey));
        const signature = index >= 0 ? signed.signatures[index] : undefined;
        if (!signature || signature.every((byte) => byte === 0))
          throw new Error(`the wallet ${adapter.publicKey.toBase58()} did not sign the payment`);
        out.push({ [adapter.publicKey.toBase58()]: signature as SignatureBytes });
      }
      return out;
    },
  };
  return {
    address: adapter.publicKey.toBase58(),
    keypair: undefined,
    adapter,
    kitSigner: () => Promise.resolve(kit),
  };
}

function fromKeypair(keypair: Keypair): ResolvedSigner {
  let kit: Promise<TransactionSigner> | undefined;
  return {
    address: keypair.publicKey.toBase58(),
    keypair,
    adapter: undefined,
    kitSigner: () => (kit ??= createKeyPairSignerFromBytes(keypair.secretKey)),
  };
}

/** A Keypair from another copy of web3.js (another realm): it has the 64-byte secret key. */
function isKeypairLike(value: unknown): value is { secretKey: Uint8Array } {
  return (
    typeof value === 'object' &&
    value !== null &&
    (value as { secretKey?: unknown }).secretKey instanceof Uint8Array &&
    typeof (value as { signTransaction?: unknown }).signTransaction !== 'function'
  );
}

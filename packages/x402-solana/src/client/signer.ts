// Who pays (README "The client", "Signers"): a Keypair, a wallet adapter that signs transactions, or
// a @solana/kit transaction signer, adapted here, in one place, into the two things the schemes need:
// a kit signer for the official @x402/svm client, and "sign these wire bytes" for push mode.
import { createPublicKey, verify } from 'node:crypto';
import {
  address as kitAddress,
  createKeyPairSignerFromBytes,
  getTransactionDecoder,
  getTransactionEncoder,
  type SignatureBytes,
  type Transaction as KitTransaction,
  type TransactionModifyingSigner,
  type TransactionPartialSigner,
  type TransactionSigner,
} from '@solana/kit';
import { Keypair, PublicKey, Transaction, VersionedTransaction } from '@solana/web3.js';
import { X402ClientError } from '../client-core/errors';

/**
 * A wallet that signs transactions without revealing its key, the shape of
 * `@solana/wallet-adapter-base`'s `SignerWalletAdapter` (what `useWallet()` of
 * `@solana/wallet-adapter-react` gives, and injected providers such as `window.phantom.solana`):
 * `signTransaction` receives a web3.js v1 transaction and answers it signed by `publicKey`.
 */
export interface WalletAdapterSigner {
  /** The wallet's address; `null` while the wallet is not connected (then nothing can be paid). */
  publicKey: { toBase58(): string } | null;
  /**
   * Signs a transaction (a legacy `Transaction` for push mode, a `VersionedTransaction` for the
   * official scheme) and answers it; may sign in place. Asked once per payment.
   */
  signTransaction<T extends Transaction | VersionedTransaction>(transaction: T): Promise<T>;
}

/**
 * A `@solana/kit` signer that signs without sending: a `TransactionPartialSigner` (e.g.
 * `createKeyPairSignerFromBytes`, a remote signer) or a `TransactionModifyingSigner` (e.g. the Wallet
 * Standard signer of `@solana/react`'s `useWalletAccountTransactionSigner`). `@x402/svm`'s
 * `ClientSvmSigner` is such a signer. A sending-only signer cannot pay: the server co-signs and sends
 * official payments.
 */
export type KitPaymentSigner = TransactionPartialSigner | TransactionModifyingSigner;

/** Who pays: a web3.js `Keypair` (or its 64 secret-key bytes), a {@link WalletAdapterSigner} or a {@link KitPaymentSigner}. */
export type PaymentSignerInput = Keypair | Uint8Array | WalletAdapterSigner | KitPaymentSigner;

/** A payer's signer resolved once by {@link resolvePaymentSigner}. */
export interface PaymentSigner {
  /** The paying wallet's address (base58). */
  address: string;
  /** The same address as a web3.js `PublicKey`. */
  publicKey: PublicKey;
  /** The kit signer the official `@x402/svm` client (`ExactSvmScheme`) signs with; made once. */
  kitSigner(): Promise<TransactionSigner>;
  /**
   * Signs a wire transaction (a legacy or v0 message, empty signature slots allowed) as this wallet
   * and answers its wire bytes with the wallet's signature checked (push mode signs through it).
   * @throws X402ClientError `signature_missing` when the wallet answered without a valid signature of its own
   */
  signWire(wire: Uint8Array): Promise<Uint8Array>;
}

/**
 * Adapts any {@link PaymentSignerInput} into a {@link PaymentSigner} (README "The client", "Signers").
 * A keypair signs locally; a wallet adapter gets a legacy `Transaction` (push) or a
 * `VersionedTransaction` (official); a kit signer gets the kit transaction. Every signature `signWire`
 * answers (push mode, and a wallet adapter in either scheme) is verified (ed25519, over the message it
 * answered) before anything is sent; a kit signer signs official payments as it is (the server
 * verifies every signature before it co-signs).
 * @throws TypeError when `signer` is none of these (a sending-only kit signer included), or a
 *   wallet adapter that is not connected (`publicKey` null)
 * @throws Error when 64 bytes are not a valid secret key
 */
export function resolvePaymentSigner(signer: PaymentSignerInput): PaymentSigner {
  // One resolution per wallet object, so what hangs on it (the official client's scheme and mint
  // cache) is reused; a wallet adapter that switched accounts is resolved again.
  const known = resolved.get(signer);
  if (known && (!isWalletAdapter(signer) || signer.publicKey?.toBase58() === known.address)) return known;
  const made = resolve(signer);
  resolved.set(signer, made);
  return made;
}

const resolved = new WeakMap<object, PaymentSigner>();

function resolve(signer: PaymentSignerInput): PaymentSigner {
  if (signer instanceof Uint8Array) return fromKeypair(Keypair.fromSecretKey(signer));
  if (signer instanceof Keypair) return fromKeypair(signer);
  if (isKeypairLike(signer)) return fromKeypair(Keypair.fromSecretKey(signer.secretKey));
  if (isWalletAdapter(signer)) return fromAdapter(signer);
  if (isKitSigner(signer)) return fromKit(signer);
  throw new TypeError(
    'the signer must be a Keypair, a wallet adapter { publicKey, signTransaction } or a @solana/kit signer with signTransactions or modifyAndSignTransactions',
  );
}

function fromKeypair(keypair: Keypair): PaymentSigner {
  let kit: Promise<TransactionSigner> | undefined;
  return {
    address: keypair.publicKey.toBase58(),
    publicKey: keypair.publicKey,
    kitSigner: () => (kit ??= createKeyPairSignerFromBytes(keypair.secretKey)),
    signWire: (wire) => {
      const tx = VersionedTransaction.deserialize(wire);
      tx.sign([keypair]);
      return Promise.resolve(tx.serialize());
    },
  };
}

function fromAdapter(adapter: WalletAdapterSigner): PaymentSigner {
  if (!adapter.publicKey) throw new TypeError('the wallet adapter is not connected (its publicKey is null)');
  const publicKey = new PublicKey(adapter.publicKey.toBase58());
  const address = publicKey.toBase58();
  const signWire = async (wire: Uint8Array): Promise<Uint8Array> => {
    const versioned = VersionedTransaction.deserialize(wire);
    // A legacy message goes to the wallet as a legacy Transaction, which every wallet signs.
    const signed =
      versioned.version === 'legacy'
        ? (await adapter.signTransaction(Transaction.from(wire))).serialize({
            requireAllSignatures: false,
            verifySignatures: false,
          })
        : (await adapter.signTransaction(versioned)).serialize();
    return checkedSignature(Uint8Array.from(signed), publicKey).wire;
  };
  return {
    address,
    publicKey,
    signWire,
    kitSigner: () => Promise.resolve(kitSignerOverWire(address, publicKey, signWire)),
  };
}

function fromKit(signer: KitPaymentSigner): PaymentSigner {
  const publicKey = new PublicKey(signer.address);
  const encoder = getTransactionEncoder();
  const decoder = getTransactionDecoder();
  return {
    address: publicKey.toBase58(),
    publicKey,
    kitSigner: () => Promise.resolve(signer),
    signWire: async (wire) => {
      const transaction = decoder.decode(wire);
      let signed: KitTransaction;
      if ('modifyAndSignTransactions' in signer) {
        const [modified] = await signer.modifyAndSignTransactions([transaction]);
        if (!modified)
          throw new X402ClientError(
            'signature_missing',
            `the signer ${signer.address} answered no transaction`,
          );
        signed = modified;
      } else {
        // Our message with its lifetime is what the signer is asked to sign; the cast states what kit's
        // decoder cannot know from bytes (the blockhash lifetime, the size already checked by web3.js).
        const [signatures] = await signer.signTransactions([
          transaction as Parameters<TransactionPartialSigner['signTransactions']>[0][number],
        ]);
        signed = { ...transaction, signatures: { ...transaction.signatures, ...signatures } };
      }
      return checkedSignature(Uint8Array.from(encoder.encode(signed)), publicKey).wire;
    },
  };
}

/**
 * The kit signer of a wallet that signs wire bytes: what `@x402/svm` calls for an official payment
 * made with a wallet adapter. Its signature, checked, is the only one it adds.
 */
function kitSignerOverWire(
  address: string,
  publicKey: PublicKey,
  signWire: (wire: Uint8Array) => Promise<Uint8Array>,
): TransactionPartialSigner {
  const encoder = getTransactionEncoder();
  return {
    address: kitAddress(address),
    async signTransactions(transactions) {
      const out: Record<string, SignatureBytes>[] = [];
      for (const transaction of transactions) {
        const signed = await signWire(Uint8Array.from(encoder.encode(transaction)));
        out.push({ [address]: checkedSignature(signed, publicKey).signature as SignatureBytes });
      }
      return out;
    },
  };
}

/** DER prefix of an ed25519 public key in SubjectPublicKeyInfo form (RFC 8410). */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');

/**
 * The wallet's signature in a signed wire transaction, verified over the message bytes it carries.
 * @throws X402ClientError `signature_missing` when the wallet is not a signer of the message, or its
 *   signature is absent or does not verify
 */
function checkedSignature(
  wire: Uint8Array,
  publicKey: PublicKey,
): { wire: Uint8Array; signature: Uint8Array } {
  let tx: VersionedTransaction;
  try {
    tx = VersionedTransaction.deserialize(wire);
  } catch (error) {
    throw new X402ClientError(
      'signature_missing',
      'the wallet answered a transaction that cannot be read',
      error,
    );
  }
  const keys = tx.message.staticAccountKeys;
  const index = keys.findIndex((key) => key.equals(publicKey));
  const signature =
    index >= 0 && index < tx.message.header.numRequiredSignatures ? tx.signatures[index] : undefined;
  const key = createPublicKey({
    key: Buffer.concat([ED25519_SPKI_PREFIX, publicKey.toBuffer()]),
    format: 'der',
    type: 'spki',
  });
  if (!signature || !verify(null, tx.message.serialize(), key, signature))
    throw new X402ClientError(
      'signature_missing',
      `the wallet ${publicKey.toBase58()} did not sign the payment transaction`,
    );
  return { wire, signature };
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

function isWalletAdapter(value: unknown): value is WalletAdapterSigner {
  return (
    typeof value === 'object' &&
    value !== null &&
    'publicKey' in value &&
    typeof (value as { signTransaction?: unknown }).signTransaction === 'function'
  );
}

function isKitSigner(value: unknown): value is KitPaymentSigner {
  if (typeof value !== 'object' || value === null) return false;
  const { address, signTransactions, modifyAndSignTransactions } = value as Record<string, unknown>;
  return (
    typeof address === 'string' &&
    (typeof signTransactions === 'function' || typeof modifyAndSignTransactions === 'function')
  );
}

/**
 * The wallet a paying function takes: `keypair` (a web3.js `Keypair`, as before) or `signer` (any
 * {@link PaymentSignerInput}, or a {@link PaymentSigner} already resolved), exactly one of them.
 */
export type PayingWallet =
  | { keypair: Keypair; signer?: undefined }
  | { signer: PaymentSignerInput | PaymentSigner; keypair?: undefined };

/**
 * The {@link PaymentSigner} of a {@link PayingWallet}.
 * @throws TypeError as {@link resolvePaymentSigner}, or when neither `keypair` nor `signer` is given
 */
export function signerOf(wallet: PayingWallet): PaymentSigner {
  const given = wallet.signer ?? wallet.keypair;
  if (given === undefined) throw new TypeError('a payment needs a keypair or a signer');
  return isResolved(given) ? given : resolvePaymentSigner(given);
}

function isResolved(value: PaymentSignerInput | PaymentSigner): value is PaymentSigner {
  return (
    typeof (value as Partial<PaymentSigner>).signWire === 'function' &&
    typeof (value as Partial<PaymentSigner>).kitSigner === 'function'
  );
}

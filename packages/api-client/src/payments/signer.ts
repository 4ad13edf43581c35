// Who pays (README, "Signers"): a keypair file, a Keypair, a wallet adapter that signs transactions, or
// a @solana/kit signer. Types only: `@repo/x402-solana/client` adapts them (resolvePaymentSigner),
// loaded with the payment engine.
import type { Keypair } from '@solana/web3.js';
import type { KitPaymentSigner, WalletAdapterSigner } from '@repo/x402-solana/client';

export type { KitPaymentSigner, WalletAdapterSigner };

/**
 * Who pays (README, "Signers"): the path of a Solana CLI keypair file (a JSON array of 64 bytes), a
 * web3.js `Keypair`, a {@link WalletAdapterSigner} (`{ publicKey, signTransaction }`, the shape of
 * `@solana/wallet-adapter`'s `SignerWalletAdapter` and of `useWallet()`), or a
 * {@link KitPaymentSigner} (`@solana/kit`'s `TransactionPartialSigner` or
 * `TransactionModifyingSigner`, which `@x402/svm`'s `ClientSvmSigner` is). Every scheme pays with
 * each of them.
 */
export type Signer = string | Keypair | WalletAdapterSigner | KitPaymentSigner;

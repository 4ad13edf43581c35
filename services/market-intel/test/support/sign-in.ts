import type { Keypair } from '@solana/web3.js';
import { createKeyPairSignerFromBytes } from '@solana/kit';
import type { SIWxSigner } from '@x402/extensions/sign-in-with-x';

type WalletAdapterSigner = Extract<SIWxSigner, { signMessage: (message: Uint8Array) => Promise<Uint8Array> }>;

/**
 * A wallet as the Solana message signer the official sign-in-with-x client takes (`@solana/kit`'s key
 * pair signer behind the wallet-adapter shape; docs/payments.md, "Signing in instead of paying again").
 */
export async function siwxSignerOf(payer: Keypair): Promise<SIWxSigner> {
  const kit = await createKeyPairSignerFromBytes(payer.secretKey);
  const signer: WalletAdapterSigner = {
    publicKey: kit.address,
    signMessage: async (message: Uint8Array) => {
      const [signatures] = await kit.signMessages([{ content: message, signatures: {} }]);
      const signature = signatures?.[kit.address];
      if (!signature) throw new Error('the key pair signer returned no signature');
      return signature;
    },
  };
  return signer;
}

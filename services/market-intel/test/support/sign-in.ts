import type { Keypair } from '@solana/web3.js';
import { createKeyPairSignerFromBytes } from '@solana/kit';
import { decodePaymentRequiredHeader } from '@x402/core/http';
import {
  createSIWxPayload,
  encodeSIWxHeader,
  SIGN_IN_WITH_X,
  type CompleteSIWxInfo,
  type SIWxExtension,
  type SIWxSigner,
} from '@x402/extensions/sign-in-with-x';

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

/**
 * The `SIGN-IN-WITH-X` header `payer` signs for the challenge of a fresh 402 of `url` (its
 * `PAYMENT-REQUIRED` extension), as the official client builds it (`createSIWxPayload`).
 * @param init the unpaid request that gets the 402 (a GET by default)
 * @throws Error when the answer is not a 402 with a sign-in challenge
 */
export async function signedProof(payer: Keypair, url: string, init?: RequestInit): Promise<string> {
  const header = (await fetch(url, init)).headers.get('payment-required');
  if (!header) throw new Error(`${url} answered without PAYMENT-REQUIRED`);
  const challenge = decodePaymentRequiredHeader(header).extensions?.[SIGN_IN_WITH_X] as
    SIWxExtension | undefined;
  const chain = challenge?.supportedChains[0];
  if (!challenge || !chain) throw new Error(`${url} offers no sign-in challenge`);
  const info: CompleteSIWxInfo = { ...challenge.info, chainId: chain.chainId, type: chain.type };
  return encodeSIWxHeader(await createSIWxPayload(info, await siwxSignerOf(payer), url));
}

import { PublicKey } from '@solana/web3.js';
import type { PaymentRequirements as CorePaymentRequirements } from '@x402/core/types';
import { ExactSvmScheme } from '@x402/svm/exact/client';
import { z } from 'zod';
import type { X402Network } from '@repo/schemas';
import { getAssociatedTokenAddressSync } from '../deps';
import {
  encodeBase64Json,
  networkOfCaip2,
  PaymentRequiredV2,
  PaymentRequirementsV2,
  ResourceInfoV2,
  type PaymentPayloadV2,
  type SettleResponseV2,
} from '@repo/x402-core';
import { PaymentRefusedError, RpcUnreachableError, X402ClientError } from '../client-core/errors';
import { checkTokenFunds, connectionFor, isUnreachable } from './pay';
import { signerOf, type PayingWallet, type PaymentSigner } from './signer';

/**
 * The decoded `PAYMENT-REQUIRED` header of a 402 (x402 v2 `PaymentRequired`; docs/payments.md "Paying with an
 * official x402 client"): what the client needs of it, other fields kept.
 */
export const PaymentRequiredHeader = PaymentRequiredV2.extend({
  resource: ResourceInfoV2.passthrough().optional(),
}).passthrough();
export type PaymentRequiredHeader = z.infer<typeof PaymentRequiredHeader>;

/**
 * What the official x402 scheme's failure to build a payment is thrown as (docs/payments.md "Paying
 * with an official x402 client"), by this client and by any payer built on the official client.
 * @param error what building the payment threw
 * @param rpcUrl the RPC the payment was built against
 * @returns an `RpcUnreachableError` when the RPC could not be reached; the signer's own
 *   `X402ClientError` (`signature_missing`) as it is; else an `X402ClientError` `payment_build_failed`
 *   carrying the first line of the cause's message
 */
export function paymentBuildError(error: unknown, rpcUrl: string): X402ClientError {
  if (isUnreachable(error)) return new RpcUnreachableError(rpcUrl, error);
  if (error instanceof X402ClientError) return error;
  return new X402ClientError(
    'payment_build_failed',
    `The official x402 client could not build the payment: ${error instanceof Error ? error.message.split('\n')[0] : String(error)}`,
    error,
  );
}

/**
 * Decodes a `PAYMENT-REQUIRED` header value (base64 JSON, or raw JSON).
 * @returns the v2 `PaymentRequired`, or `undefined` when the value is not one
 */
export function decodePaymentRequired(value: string): PaymentRequiredHeader | undefined {
  const trimmed = value.trim();
  let json: unknown;
  try {
    json = JSON.parse(trimmed.startsWith('{') ? trimmed : Buffer.from(trimmed, 'base64').toString('utf8'));
  } catch {
    return undefined;
  }
  const parsed = PaymentRequiredHeader.safeParse(json);
  return parsed.success ? parsed.data : undefined;
}

const SettleResponse = z.object({
  success: z.boolean(),
  transaction: z.string().min(1),
  network: z.string().min(1),
  payer: z.string(),
});

/**
 * Decodes a `PAYMENT-RESPONSE` header value (base64 JSON `{ success, transaction, network, payer }`,
 * CAIP-2 `network`).
 * @returns the settlement, or `undefined` when the value is not one
 */
export function decodeSettleResponse(value: string): SettleResponseV2 | undefined {
  try {
    const parsed = SettleResponse.safeParse(JSON.parse(Buffer.from(value.trim(), 'base64').toString('utf8')));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * The first requirement of a `PaymentRequired` this client can pay with the official exact SVM scheme:
 * scheme `exact`, a Solana CAIP-2 network this project knows and has an RPC URL for, and
 * `extra.feePayer` (the server's fee payer) set.
 * @param rpcUrls RPC URL per network
 * @returns the requirement and its network, or `undefined` when none qualifies
 */
export function officialOfferOf(
  required: PaymentRequiredHeader,
  rpcUrls: Partial<Record<X402Network, string>>,
): { requirement: PaymentRequirementsV2; network: X402Network; rpcUrl: string } | undefined {
  for (const requirement of required.accepts) {
    const network = networkOfCaip2(requirement.network);
    const rpcUrl = network && rpcUrls[network];
    if (
      requirement.scheme === 'exact' &&
      network !== undefined &&
      rpcUrl &&
      requirement.network.includes(':') &&
      typeof requirement.extra?.feePayer === 'string'
    )
      return { requirement, network, rpcUrl };
  }
  return undefined;
}

/**
 * Input of {@link createOfficialPayment}: the options and the paying wallet, `keypair` or `signer`
 * (README "The client", "Signers"); it signs the transfer and pays no SOL.
 */
export type CreateOfficialPaymentInput = CreateOfficialPaymentOptions & PayingWallet;

/** What {@link createOfficialPayment} pays, besides the wallet. */
export interface CreateOfficialPaymentOptions {
  /** The `exact` requirement to pay (an element of `PAYMENT-REQUIRED`'s `accepts`, CAIP-2 network, `extra.feePayer`). */
  requirement: PaymentRequirementsV2;
  /** `resource` of the `PaymentRequired`, echoed in the payload as the official client does. */
  resource?: NonNullable<PaymentRequiredHeader['resource']>;
  /** `extensions` of the `PaymentRequired`, echoed likewise. */
  extensions?: Record<string, unknown>;
  /** JSON-RPC URL of the requirement's network. */
  rpcUrl: string;
  /** Timeout of each balance-check RPC call in milliseconds; default 10000. */
  rpcTimeoutMs?: number;
}

/** What {@link createOfficialPayment} built. */
export interface OfficialPayment {
  /** The `PAYMENT-SIGNATURE` header value: base64 JSON of {@link payload}. */
  header: string;
  /** `{ x402Version: 2, accepted, resource?, extensions?, payload: { transaction } }`. */
  payload: PaymentPayloadV2;
  /** The network, as this project names it. */
  network: X402Network;
  /** The payer's wallet address (base58). */
  payer: string;
  /** The token account the transfer credits: the associated token account of `payTo` for `asset`. */
  destination: string;
}

const schemes = new WeakMap<PaymentSigner, Map<string, Promise<ExactSvmScheme>>>();

/** One official client scheme per wallet and RPC URL, so its mint cache is reused across payments. */
function schemeFor(signer: PaymentSigner, rpcUrl: string): Promise<ExactSvmScheme> {
  let byUrl = schemes.get(signer);
  if (!byUrl) schemes.set(signer, (byUrl = new Map()));
  let scheme = byUrl.get(rpcUrl);
  if (!scheme) {
    scheme = signer.kitSigner().then((kit) => new ExactSvmScheme(kit, { rpcUrl }));
    byUrl.set(rpcUrl, scheme);
  }
  return scheme;
}

/**
 * Builds an official x402 exact SVM payment (docs/payments.md "Paying with an official x402 client"): checks that
 * the wallet's associated token account holds the price, then lets the official client
 * (`@x402/svm`'s `ExactSvmScheme`) build and partially sign the transaction — compute unit limit and
 * price, `transferChecked` of exactly `amount` of `asset` to the associated token account of `payTo`,
 * a memo — with `extra.feePayer` as fee payer. Nothing is sent: the server co-signs and sends it. The
 * caller enforces any spend cap before calling.
 *
 * @returns the `PAYMENT-SIGNATURE` header value and what it pays
 * @throws PaymentRefusedError the requirement is not `exact`, not on a known Solana network, or has no
 *   `extra.feePayer`
 * @throws InsufficientFundsError `no_token_account` or `token_balance` (checked before signing)
 * @throws RpcUnreachableError the RPC cannot be reached
 * @throws X402ClientError `payment_build_failed`: the official client could not build the transaction
 *   (or the signer did not sign it)
 * @throws TypeError when `signer` is not a Keypair, a wallet adapter or a kit signer
 */
export async function createOfficialPayment(input: CreateOfficialPaymentInput): Promise<OfficialPayment> {
  const { requirement, rpcUrl } = input;
  const signer = signerOf(input);
  const network = networkOfCaip2(requirement.network);
  if (requirement.scheme !== 'exact' || network === undefined || !requirement.network.includes(':'))
    throw new PaymentRefusedError(
      `Cannot pay a "${requirement.scheme}" requirement on ${requirement.network} with the official exact SVM scheme`,
    );
  if (typeof requirement.extra?.feePayer !== 'string')
    throw new PaymentRefusedError('The official exact SVM requirement names no extra.feePayer');

  const connection = connectionFor(rpcUrl, input.rpcTimeoutMs ?? 10_000);
  const call = <T>(run: () => Promise<T>): Promise<T> =>
    run().catch((error: unknown) => {
      throw isUnreachable(error) ? new RpcUnreachableError(rpcUrl, error) : error;
    });
  const mint = new PublicKey(requirement.asset);
  const { programId } = await checkTokenFunds({
    connection,
    owner: signer.publicKey,
    mint,
    amountAtomic: BigInt(requirement.amount),
    call,
  });

  let partial;
  try {
    const scheme = await schemeFor(signer, rpcUrl);
    // Our zod shape of a v2 requirement; the official type narrows `network` to `${string}:${string}`,
    // checked above.
    partial = await scheme.createPaymentPayload(2, requirement as CorePaymentRequirements);
  } catch (error) {
    throw paymentBuildError(error, rpcUrl);
  }
  const payload: PaymentPayloadV2 = {
    x402Version: 2,
    ...(input.resource ? { resource: input.resource } : {}),
    accepted: requirement,
    payload: partial.payload,
    ...(input.extensions ? { extensions: input.extensions } : {}),
  };
  return {
    header: encodeBase64Json(payload),
    payload,
    network,
    payer: signer.address,
    destination: getAssociatedTokenAddressSync(
      mint,
      new PublicKey(requirement.payTo),
      true,
      programId,
    ).toBase58(),
  };
}

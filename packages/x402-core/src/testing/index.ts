// @repo/x402-core/testing — test data for the packages and services that speak x402.
import { randomBytes } from 'node:crypto';
import { bs58 } from '../deps';
import { ReceiptVerificationError } from '../receipts';
import { buildPaymentRequirements, type BuildPaymentRequirementsInput } from '../requirements';

/**
 * The `code` of the {@link ReceiptVerificationError} `check` rejects with, or `"verified"` when it
 * resolves (docs/payments.md, "Signed offers and receipts").
 * @throws whatever `check` rejects with that is not a ReceiptVerificationError
 */
export async function receiptRefusal(check: Promise<unknown>): Promise<string> {
  try {
    await check;
  } catch (error) {
    if (error instanceof ReceiptVerificationError) return error.code;
    throw error;
  }
  return 'verified';
}

/** A fresh random 64-byte transaction signature in base58, never on any ledger. */
export function buildSignature(): string {
  return bs58.encode(randomBytes(64));
}

/**
 * Requirements of 0.10 USDC (`100000` atomic units) for market gaps on the main network, with the
 * mainnet USDC mint and a fixed merchant account; `overrides` replace any field.
 * @throws Error as {@link buildPaymentRequirements} does for invalid overrides
 */
export function buildRequirements(overrides: Partial<BuildPaymentRequirementsInput> = {}) {
  return buildPaymentRequirements({
    network: 'solana',
    asset: 'EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v',
    payTo: '9WzDXwBbmkg8ZTbNMqUxvQRAyrZzDsGYdLVL9zYtAWWM',
    amountAtomic: 100000n,
    resource: 'https://api.example.com/api/v1/scout/gaps?sector=ai',
    description: 'Market gaps',
    mimeType: 'application/json',
    ...overrides,
  });
}

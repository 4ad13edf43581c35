// @repo/x402-core/testing — test data for the packages and services that speak x402.
import { randomBytes } from 'node:crypto';
import { bs58 } from '../deps';
import { buildPaymentRequirements, type BuildPaymentRequirementsInput } from '../requirements';

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

// @repo/x402-core/testing — test data for the packages and services that speak x402.
import { randomBytes } from 'node:crypto';
import { bs58 } from '../deps';

/** A fresh random 64-byte transaction signature in base58, never on any ledger. */
export function buildSignature(): string {
  return bs58.encode(randomBytes(64));
}

import { createPrivateKey, createPublicKey, verify, type KeyObject } from 'node:crypto';

// Ed25519 with node:crypto's synchronous calls (docs/payments.md, "Paying with an official x402 client"):
// the official scheme's signature checks and co-signature, without WebCrypto's job dispatch.

/** DER prefixes of an Ed25519 public key (SPKI) and private key (PKCS #8), before the 32 raw bytes. */
const ED25519_SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
const ED25519_PKCS8_PREFIX = Buffer.from('302e020100300506032b657004220420', 'hex');

/**
 * The Ed25519 private key of a 32-byte seed (the first half of a Solana secret key), for node:crypto's
 * `sign(null, message, key)`.
 * @throws Error when the seed is not 32 bytes
 */
export function ed25519PrivateKey(seed: Uint8Array): KeyObject {
  return createPrivateKey({ key: Buffer.concat([ED25519_PKCS8_PREFIX, seed]), format: 'der', type: 'pkcs8' });
}

/**
 * Whether `signature` is `key`'s Ed25519 signature of `message` (false for a key that is not a point),
 * computed synchronously: a verification costs less than WebCrypto's job dispatch around it.
 */
export function verifiesEd25519(key: Uint8Array, signature: Uint8Array, message: Uint8Array): boolean {
  try {
    const publicKey = createPublicKey({
      key: Buffer.concat([ED25519_SPKI_PREFIX, key]),
      format: 'der',
      type: 'spki',
    });
    return verify(null, message, publicKey, signature);
  } catch {
    return false;
  }
}

import fs from 'node:fs';
import path from 'node:path';
import { Keypair } from '@solana/web3.js';

/**
 * Writes `keypair` as a Solana CLI keypair file (a JSON array of the 64 secret-key bytes), mode 0600,
 * creating parent directories. Throws on I/O errors.
 */
export function writeKeypairFile(file: string, keypair: Keypair): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, `${JSON.stringify(Array.from(keypair.secretKey))}\n`, { mode: 0o600 });
}

/**
 * Reads a Solana CLI keypair file (JSON array of 64 numbers).
 * @throws Error when the file is missing or is not a 64-byte keypair
 */
export function readKeypairFile(file: string): Keypair {
  const parsed: unknown = JSON.parse(fs.readFileSync(file, 'utf8'));
  if (
    !Array.isArray(parsed) ||
    parsed.length !== 64 ||
    !parsed.every((b) => Number.isInteger(b) && b >= 0 && b < 256)
  ) {
    throw new Error(`${file} is not a Solana keypair file (expected a JSON array of 64 bytes)`);
  }
  return Keypair.fromSecretKey(Uint8Array.from(parsed as number[]));
}

/** Reads the keypair at `file`, or generates one and writes it there when the file does not exist. */
export function loadOrCreateKeypair(file: string): Keypair {
  if (fs.existsSync(file)) return readKeypairFile(file);
  const keypair = Keypair.generate();
  writeKeypairFile(file, keypair);
  return keypair;
}

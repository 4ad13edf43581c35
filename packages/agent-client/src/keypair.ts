import { existsSync, readFileSync } from 'node:fs';
import { Keypair } from '@solana/web3.js';
import { UsageError } from './options';

/**
 * Reads a Solana CLI keypair file (a JSON array of the 64 secret-key bytes). Loaded only when a 402
 * must be paid: `@solana/web3.js` is most of agent-pay's start time.
 * @throws UsageError when the file is missing or malformed
 */
export function loadKeypair(path: string): Keypair {
  if (!existsSync(path))
    throw new UsageError(`keypair file not found: ${path} (pass --keypair or set AGENT_KEYPAIR)`);
  let bytes: unknown;
  try {
    bytes = JSON.parse(readFileSync(path, 'utf8'));
  } catch {
    throw new UsageError(`keypair file is not JSON: ${path}`);
  }
  if (
    !Array.isArray(bytes) ||
    bytes.length !== 64 ||
    !bytes.every((b) => Number.isInteger(b) && b >= 0 && b <= 255)
  ) {
    throw new UsageError(`keypair file must hold a JSON array of 64 bytes: ${path}`);
  }
  return Keypair.fromSecretKey(Uint8Array.from(bytes as number[]));
}

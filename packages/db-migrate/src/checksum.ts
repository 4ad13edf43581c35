import { createHash } from 'node:crypto';

/**
 * The checksum Prisma stores in `_prisma_migrations.checksum`: the SHA-256 of the `migration.sql`
 * contents, as 64 lower-case, zero-padded hexadecimal characters. The bytes are hashed exactly as they
 * are on disk (no line-ending normalisation when recording).
 *
 * @param script - the migration script, as the file's bytes or as its text (hashed as UTF-8)
 * @returns the 64-character hexadecimal checksum
 */
export function migrationChecksum(script: Buffer | string): string {
  return createHash('sha256').update(script).digest('hex');
}

/** Prisma's pre-2021 rendering: each byte as hex without zero padding (prisma-engines issue 1887). */
function unpaddedHex(script: string): string {
  const digest = createHash('sha256').update(script, 'utf8').digest();
  return Array.from(digest, (byte) => byte.toString(16)).join('');
}

/**
 * Whether a migration script matches a checksum recorded in `_prisma_migrations`, with Prisma's rules:
 * the script also matches when only its line endings differ (`\r\n` vs `\n`, either way), and a
 * recorded checksum that is not 64 characters long is compared in Prisma's old unpadded rendering.
 *
 * @param script - the migration script text
 * @param recorded - the checksum stored in the database
 * @returns true when Prisma would consider the script unchanged
 */
export function scriptMatchesChecksum(script: string, recorded: string): boolean {
  const variants = [script, script.replace(/\r\n/g, '\n'), script.replace(/\n/g, '\r\n')];
  const legacy = recorded.length !== 0 && recorded.length !== 64;
  return variants.some((variant) =>
    legacy ? unpaddedHex(variant) === recorded : migrationChecksum(Buffer.from(variant, 'utf8')) === recorded,
  );
}

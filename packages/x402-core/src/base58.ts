const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz';

/** Digit of each ASCII code in the Bitcoin base58 alphabet, -1 for a character outside it. */
const DIGITS = new Int8Array(128).fill(-1);
for (let i = 0; i < ALPHABET.length; i++) DIGITS[ALPHABET.charCodeAt(i)] = i;

/**
 * The number of bytes `text` decodes to in base58 (Bitcoin alphabet, as `bs58.decode`: each leading
 * `1` is a zero byte), without building them: every push payment's signature is checked to be 64
 * bytes before it is claimed, and `bs58.decode` costs about a percent of a paid request.
 *
 * @param text the base58 text
 * @returns the decoded length in bytes, or -1 when a character is not in the alphabet
 */
export function base58ByteLength(text: string): number {
  let zeros = 0;
  while (zeros < text.length && text.charCodeAt(zeros) === 49) zeros++;
  // The value in little-endian 32-bit limbs; each digit adds less than 6 bits.
  const limbs = new Uint32Array(Math.ceil(((text.length - zeros) * 6) / 32) + 1);
  let used = 0;
  for (let i = zeros; i < text.length; i++) {
    const code = text.charCodeAt(i);
    let carry = code < 128 ? (DIGITS[code] ?? -1) : -1;
    if (carry < 0) return -1;
    for (let j = 0; j < used; j++) {
      const x = (limbs[j] ?? 0) * 58 + carry; // below 2^38: exact in a double
      limbs[j] = x % 4294967296;
      carry = Math.floor(x / 4294967296);
    }
    if (carry > 0) limbs[used++] = carry;
  }
  if (used === 0) return zeros;
  const top = limbs[used - 1] ?? 0;
  return zeros + (used - 1) * 4 + (top >= 0x1000000 ? 4 : top >= 0x10000 ? 3 : top >= 0x100 ? 2 : 1);
}

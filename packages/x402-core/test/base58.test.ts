import fc from 'fast-check';
import { base58ByteLength } from '../src/base58';
import { bs58 } from '../src/deps';

describe('base58ByteLength', () => {
  it('When any bytes are base58-encoded, then the length is the number of bytes, leading zeros included', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 80 }), fc.nat(4), (bytes, zeros) => {
        const withZeros = Uint8Array.from([...new Array<number>(zeros).fill(0), ...bytes]);
        expect(base58ByteLength(bs58.encode(withZeros))).toBe(withZeros.length);
      }),
      { numRuns: 2000 },
    );
  });

  it('When the value sits on a byte boundary (1, 0xff, 0x80 followed by zero bytes, at every length), then the length is exact', () => {
    for (let length = 1; length <= 70; length++) {
      for (const first of [1, 0x7f, 0x80, 0xff]) {
        for (const fill of [0, 0xff]) {
          const bytes = new Uint8Array(length).fill(fill);
          bytes[0] = first;
          expect(base58ByteLength(bs58.encode(bytes))).toBe(length);
        }
      }
    }
  });

  it('When any base58 text is measured, then the length is what bs58 decodes it to (64-byte signatures and their neighbours)', () => {
    const digit = fc.constantFrom(...'123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz');
    fc.assert(
      fc.property(fc.array(digit, { minLength: 0, maxLength: 95 }), (digits) => {
        const text = digits.join('');
        expect(base58ByteLength(text)).toBe(bs58.decode(text).length);
      }),
      { numRuns: 3000 },
    );
    // The largest 88-digit values overflow 64 bytes.
    expect(base58ByteLength('z'.repeat(88))).toBe(bs58.decode('z'.repeat(88)).length);
    expect(base58ByteLength('z'.repeat(88))).toBeGreaterThan(64);
  });

  it('When a character is outside the alphabet (0, O, I, l, non-ASCII), then it is -1', () => {
    for (const text of ['0', 'abcO', 'Il', '1l', 'é', '5\u{1F600}', ' 2', '2\n'])
      expect(base58ByteLength(text)).toBe(-1);
  });
});

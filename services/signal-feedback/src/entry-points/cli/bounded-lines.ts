/**
 * One line of a {@link boundedLines} stream (numbered from 1): its text, or why it has none: longer than
 * the cap, or not UTF-8.
 */
export type BoundedLine =
  { number: number; text: string } | { number: number; refused: 'too_long' | 'not_utf8' };

/**
 * The lines of a byte stream, read chunk by chunk, with at most `maxBytes` of a line held at a time
 * (README, "Importing history"): `readline` keeps a whole line however long, so a hostile file without
 * newlines would fill the memory. A longer line is yielded as `too_long` and its bytes dropped; one that is not UTF-8 as `not_utf8`. Lines end
 * at `\n` (a trailing `\r` is removed); a final line without `\n` counts; empty lines are yielded too.
 * @param maxBytes longest line kept, in bytes (without its `\n`, with a `\r` before it)
 */
export async function* boundedLines(
  input: AsyncIterable<Buffer | string>,
  maxBytes: number,
): AsyncGenerator<BoundedLine> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let parts: Buffer[] = [];
  let size = 0;
  let tooLong = false;
  let number = 0;
  const finish = (): BoundedLine => {
    number += 1;
    if (tooLong) return { number, refused: 'too_long' };
    let line = Buffer.concat(parts, size);
    if (line.at(-1) === 0x0d) line = line.subarray(0, line.length - 1);
    try {
      return { number, text: decoder.decode(line) };
    } catch {
      return { number, refused: 'not_utf8' };
    }
  };
  const reset = () => {
    parts = [];
    size = 0;
    tooLong = false;
  };
  for await (const chunk of input) {
    const bytes = typeof chunk === 'string' ? Buffer.from(chunk) : chunk;
    let start = 0;
    for (;;) {
      const end = bytes.indexOf(0x0a, start);
      const piece = bytes.subarray(start, end === -1 ? bytes.length : end);
      if (!tooLong && size + piece.length > maxBytes) {
        parts = [];
        size = 0;
        tooLong = true;
      } else if (!tooLong) {
        parts.push(piece);
        size += piece.length;
      }
      if (end === -1) break;
      yield finish();
      reset();
      start = end + 1;
    }
  }
  if (size > 0 || tooLong) yield finish();
}

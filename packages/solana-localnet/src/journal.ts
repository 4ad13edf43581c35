import fs from 'node:fs';
import path from 'node:path';

/**
 * An append-only JSON Lines file. Each `append` is one synchronous `write(2)` of one line, so a line
 * reaches the OS before the RPC answer is sent and a crash loses at most a torn last line (skipped on
 * replay). No snapshotting: replay applies lines in order and the last write wins.
 */
export class Journal {
  private fd: number | null;

  private constructor(
    readonly file: string,
    fd: number,
  ) {
    this.fd = fd;
  }

  /** Opens (creating directories and the file if needed) `file` for appending. Throws on I/O errors. */
  static open(file: string): Journal {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    return new Journal(file, fs.openSync(file, 'a'));
  }

  /**
   * Reads every complete line of `file` (missing file: nothing) and passes each parsed value to
   * `apply`, in order. A line that does not parse (a write torn by a crash) is skipped and counted.
   * @returns the number of lines applied and skipped
   */
  static replay(file: string, apply: (entry: unknown) => void): { applied: number; skipped: number } {
    if (!fs.existsSync(file)) return { applied: 0, skipped: 0 };
    const text = fs.readFileSync(file, 'utf8');
    let applied = 0;
    let skipped = 0;
    for (const line of text.split('\n')) {
      if (line.length === 0) continue;
      let entry: unknown;
      try {
        entry = JSON.parse(line);
      } catch {
        skipped += 1;
        continue;
      }
      apply(entry);
      applied += 1;
    }
    return { applied, skipped };
  }

  /** Appends one JSON value as a line. Throws if the journal is closed or the write fails. */
  append(entry: unknown): void {
    if (this.fd === null) throw new Error(`journal ${this.file} is closed`);
    fs.writeSync(this.fd, `${JSON.stringify(entry)}\n`);
  }

  /** Flushes to disk (fsync) and closes the file; later calls do nothing. */
  close(): void {
    if (this.fd === null) return;
    fs.fsyncSync(this.fd);
    fs.closeSync(this.fd);
    this.fd = null;
  }
}

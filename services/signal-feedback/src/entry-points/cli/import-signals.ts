// `admin import-signals <product-id> <file|->`: dated history into the database (README, "Importing history").
import { once } from 'node:events';
import { createReadStream, createWriteStream, type WriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { z } from 'zod';
import type { KeyOwner, SignalRepository, SignalRow } from '../../data/signals';
import { IMPORT_MAX_LINE_BYTES, parseImportLine } from '../../domain/signal-import';
import { boundedLines } from './bounded-lines';

/** Signals stored per statement. */
const BATCH_ROWS = 1000;
/** Bad lines printed before the rest are only counted. */
const MAX_REPORTED = 20;

/** Options of {@link importSignals}. */
export interface ImportSignalsOptions {
  signals: SignalRepository;
  productId: string;
  /** A file path, or `-` for `stdin`. */
  source: string;
  stdin?: NodeJS.ReadableStream;
  out: (line: string) => void;
  /** The time of the import: the bounds of the timestamps (default: now). */
  now?: Date;
}

/**
 * Imports an NDJSON file of dated signals for a product (README, "Importing history"): reads the whole
 * file once to validate every line (see `parseImportLine`), then, only when all are valid, reads it
 * again and stores it in batches of 1,000 through `SignalRepository.importHistory` (not counted against
 * the quota; a signal already stored with the same `messageId` and time is skipped). `stdin` is copied
 * to a temporary file during the first read. Memory stays bounded: one line of at most 64 KiB and one
 * batch at a time.
 * @returns the exit code: 0 imported, 1 unknown product, unreadable file or bad lines (nothing stored)
 */
export async function importSignals(o: ImportSignalsOptions): Promise<number> {
  const owner = z.uuid().safeParse(o.productId).success
    ? await o.signals.findProductOwner(o.productId)
    : undefined;
  if (!owner) {
    o.out(`no product with id ${o.productId}`);
    return 1;
  }
  const now = o.now ?? new Date();
  let spool: string | undefined;
  try {
    let path = o.source;
    let first: AsyncIterable<Buffer | string>;
    if (o.source === '-') {
      spool = await mkdtemp(join(tmpdir(), 'signal-import-'));
      path = join(spool, 'signals.ndjson');
      first = copying(o.stdin ?? process.stdin, createWriteStream(path));
    } else first = createReadStream(path);
    const checked = await validate(first, owner, now, o.out);
    if (checked.bad > 0) {
      o.out(`${checked.bad} bad line(s) in ${checked.lines} line(s): nothing imported`);
      return 1;
    }
    const totals = await store(createReadStream(path), owner, now, o.signals);
    let inserted = 0;
    let present = 0;
    const perContext: string[] = [];
    for (const [context, t] of totals) {
      inserted += t.inserted;
      present += t.read - t.inserted;
      perContext.push(
        `  ${context === null ? 'unrouted' : `context ${context}`}: ${t.inserted} inserted, ${t.read - t.inserted} already present`,
      );
    }
    o.out(
      `imported ${checked.signals} signal(s) for product ${owner.productId}: ${inserted} inserted, ${present} already present`,
    );
    for (const line of perContext.sort()) o.out(line);
    return 0;
  } catch (err) {
    const code = (err as { code?: unknown }).code;
    if (code === 'ENOENT' || code === 'EISDIR' || code === 'EACCES') {
      o.out(`cannot read ${o.source}: ${(err as Error).message}`);
      return 1;
    }
    throw err;
  } finally {
    if (spool) await rm(spool, { recursive: true, force: true });
  }
}

/** `input`'s chunks, each also written to `file` (closed at the end). */
async function* copying(input: AsyncIterable<Buffer | string>, file: WriteStream) {
  try {
    for await (const chunk of input) {
      if (!file.write(chunk)) await once(file, 'drain');
      yield chunk;
    }
  } finally {
    file.end();
    await once(file, 'close');
  }
}

/** The first read: every line checked, the first {@link MAX_REPORTED} bad ones printed. */
async function validate(
  input: AsyncIterable<Buffer | string>,
  owner: KeyOwner,
  now: Date,
  out: (line: string) => void,
): Promise<{ lines: number; signals: number; bad: number }> {
  let lines = 0;
  let signals = 0;
  let bad = 0;
  const report = (line: number, text: string) => {
    bad += 1;
    if (bad <= MAX_REPORTED) out(`line ${line}: ${text}`);
    else if (bad === MAX_REPORTED + 1) out('(further bad lines are counted, not printed)');
  };
  for await (const line of boundedLines(input, IMPORT_MAX_LINE_BYTES)) {
    lines = line.number;
    if ('refused' in line) {
      report(
        line.number,
        line.refused === 'too_long' ? `is longer than ${IMPORT_MAX_LINE_BYTES} bytes` : 'is not UTF-8',
      );
      continue;
    }
    if (line.text.trim() === '') continue;
    const parsed = parseImportLine(line.text, owner.contexts, now);
    if (parsed.ok) signals += 1;
    else
      report(
        line.number,
        parsed.issues
          .map((i) => (i.path === '(root)' ? i.message : `${i.path}: ${i.message} (${i.code})`))
          .join('; '),
      );
  }
  return { lines, signals, bad };
}

/** The second read: every line stored, in batches; returns signals read and inserted per context. */
async function store(
  input: AsyncIterable<Buffer | string>,
  owner: KeyOwner,
  now: Date,
  signals: SignalRepository,
): Promise<Map<string | null, { read: number; inserted: number }>> {
  const totals = new Map<string | null, { read: number; inserted: number }>();
  const total = (context: string | null) => {
    let t = totals.get(context);
    if (!t) totals.set(context, (t = { read: 0, inserted: 0 }));
    return t;
  };
  let batch: SignalRow[] = [];
  const flush = async () => {
    if (batch.length === 0) return;
    for (const row of batch) total(row.contextId).read += 1;
    const inserted = await signals.importHistory(owner.productId, batch);
    for (const [context, n] of inserted) total(context).inserted += n;
    batch = [];
  };
  for await (const line of boundedLines(input, IMPORT_MAX_LINE_BYTES)) {
    if ('refused' in line) throw new Error(`line ${line.number} changed since it was checked`);
    if (line.text.trim() === '') continue;
    const parsed = parseImportLine(line.text, owner.contexts, now);
    if (!parsed.ok) throw new Error(`line ${line.number} changed since it was checked`);
    batch.push(parsed.row);
    if (batch.length >= BATCH_ROWS) await flush();
  }
  await flush();
  return totals;
}

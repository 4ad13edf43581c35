// Checks that every documentation citation in the source and config files names a Markdown heading
// that exists. A citation is a document followed by one or more quoted headings: README or a path
// ending in .md, an optional comma or colon, then the heading in double quotes. Headings joined by a
// comma or a colon form a chain: each one is a sub-heading inside the section of the one before.
// Further headings after `and`, `or` or `;` are separate citations of the same document.
// Which file a document names:
// - a path (docs/architecture.md, services/x/README.md) is relative to the repository root;
// - `root README` is README.md; `package README`, `x README` or `@repo/x's README` is that package's;
// - a bare README (or README.md) inside packages/x/ or services/x/ is that package's README.md when
//   it has the heading, else the root README.md, which documents the shared packages too; elsewhere
//   it is the root README.md;
// - `each service's README` names no one file and is not checked.
// A heading matches its exact text (inline code marks aside) or that text without a trailing
// parenthetical. A paragraph or table row, cited as `its "X" paragraph`, is not a heading and not checked.
// Usage: tsx scripts/check-doc-references.ts [root]; exits 1 when a citation is broken.
import fs from 'node:fs';
import path from 'node:path';

/** One Markdown heading: its level (1 to 6) and its text as written, without the `#` marks. */
export interface Heading {
  level: number;
  text: string;
}

/** One documentation citation found in a source file. */
export interface Citation {
  /** Path of the citing file, relative to the root, with `/` separators. */
  file: string;
  /** 1-based line the citation starts on. */
  line: number;
  /** The document as written (`README`, `docs/architecture.md`). */
  doc: string;
  /** The Markdown files it may name, relative to the root, in the order they are tried. */
  candidates: string[];
  /** The cited headings, outermost first. */
  chain: string[];
}

/** A citation whose headings are not all found. */
export interface BrokenCitation extends Citation {
  /** The one-line report, `file:line: cites …`. */
  message: string;
}

/** The outcome of a scan: every citation checked, the broken ones, and those naming no one file. */
export interface ScanResult {
  citations: Citation[];
  broken: BrokenCitation[];
  /** Citations of a generic document (`each service's README`), not checked. */
  skipped: number;
}

const SKIPPED_DIRS = new Set(['node_modules', 'dist', 'build', 'coverage', '.git', '.turbo', 'generated']);
const SCANNED_EXTENSIONS = new Set([
  '.ts',
  '.tsx',
  '.mts',
  '.cts',
  '.js',
  '.mjs',
  '.cjs',
  '.sh',
  '.yaml',
  '.yml',
  '.sql',
  '.prisma',
]);

/** Whether `name` is a file the scan reads: sources, scripts, config and Dockerfiles, never Markdown. */
function isScanned(name: string): boolean {
  if (name === 'pnpm-lock.yaml') return false;
  if (name === 'Dockerfile' || name.startsWith('Dockerfile.') || name.endsWith('.Dockerfile')) return true;
  return SCANNED_EXTENSIONS.has(path.extname(name));
}

/** Every file under `root` that `include` accepts (default: the scanned ones), relative to it with `/` separators, sorted. */
export function listFiles(root: string, include: (name: string) => boolean = isScanned): string[] {
  const out: string[] = [];
  const walk = (dir: string, rel: string): void => {
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const relPath = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) {
        if (!SKIPPED_DIRS.has(entry.name)) walk(path.join(dir, entry.name), relPath);
      } else if (entry.isFile() && include(entry.name)) {
        out.push(relPath);
      }
    }
  };
  walk(root, '');
  return out.sort();
}

/**
 * The ATX headings of a Markdown text, in order, outside fenced code blocks (a `# comment` in a shell
 * example is not a heading). Setext headings are not used in this repository and not collected.
 */
export function extractHeadings(markdown: string): Heading[] {
  const headings: Heading[] = [];
  let fence: string | undefined;
  for (const line of markdown.split(/\r?\n/)) {
    const fenceMatch = /^ {0,3}(`{3,}|~{3,})/.exec(line);
    if (fenceMatch?.[1]) {
      const marks = fenceMatch[1];
      if (fence === undefined) fence = marks;
      else if (marks[0] === fence[0] && marks.length >= fence.length && line.trim() === marks)
        fence = undefined;
      continue;
    }
    if (fence !== undefined) continue;
    const match = /^ {0,3}(#{1,6})[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$/.exec(line);
    if (match?.[1] && match[2] !== undefined) headings.push({ level: match[1].length, text: match[2] });
  }
  return headings;
}

/** Heading text as compared: inline code marks and link targets dropped, spaces collapsed, no trailing `.` or `:`. */
export function normaliseHeading(text: string): string {
  return text
    .replace(/\[([^\]]*)\]\([^)]*\)/g, '$1')
    .replace(/`/g, '')
    .replace(/\s+/g, ' ')
    .trim()
    .replace(/[.:]+$/, '');
}

/**
 * Whether `cited` names `heading`: the same normalised text, or the heading's text without a trailing
 * parenthetical, which citations leave out (`prove/debate` for `prove/debate (src/…/prove/)`).
 */
export function headingMatches(cited: string, heading: string): boolean {
  const want = normaliseHeading(cited);
  const have = normaliseHeading(heading);
  return want === have || want === have.replace(/\s*\([^()]*\)$/, '');
}

/** Whether `headings` hold `chain` as nested sections; `failedAt` is the first part not found. */
function findChain(headings: Heading[], chain: string[]): { found: boolean; failedAt: number } {
  let best = 0;
  const search = (from: number, to: number, depth: number): boolean => {
    if (depth === chain.length) return true;
    const part = chain[depth] ?? '';
    for (let i = from; i < to; i++) {
      const heading = headings[i];
      if (!heading || !headingMatches(part, heading.text)) continue;
      best = Math.max(best, depth + 1);
      let end = i + 1;
      while (end < headings.length && (headings[end]?.level ?? 0) > heading.level) end++;
      if (search(i + 1, end, depth + 1)) return true;
    }
    return false;
  };
  const found = search(0, headings.length, 0);
  return { found, failedAt: found ? -1 : best };
}

/** Edit distance of two strings, for the closest-heading hint. */
function distance(a: string, b: string): number {
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    const current = [i];
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      current.push(
        Math.min((previous[j] ?? 0) + 1, (current[j - 1] ?? 0) + 1, (previous[j - 1] ?? 0) + cost),
      );
    }
    previous = current;
  }
  return previous[b.length] ?? 0;
}

/** The heading closest to `cited`, case-insensitively. */
function closest(cited: string, headings: Heading[]): string | undefined {
  const want = normaliseHeading(cited).toLowerCase();
  let best: { text: string; score: number } | undefined;
  for (const heading of headings) {
    const have = normaliseHeading(heading.text).toLowerCase();
    const score = have.includes(want) || want.includes(have) ? 0 : distance(want, have);
    if (!best || score < best.score) best = { text: heading.text, score };
  }
  return best?.text;
}

/** A source file as one line of comment text: comment marks stripped, lines joined, with a map back to line numbers. */
function flatten(source: string): { text: string; lineAt: (offset: number) => number } {
  const starts: number[] = [];
  let text = '';
  for (const line of source.split(/\r?\n/)) {
    starts.push(text.length);
    // A citation wraps over comment lines: drop each line's comment marks so its parts join.
    text += line.replace(/^\s*(?:\/\*\*?|\*(?!\/)|\/\/\/?|#|--)?\s*/, '') + ' ';
  }
  const lineAt = (offset: number): number => {
    let low = 0;
    let high = starts.length - 1;
    while (low < high) {
      const mid = Math.ceil((low + high) / 2);
      if ((starts[mid] ?? 0) <= offset) low = mid;
      else high = mid - 1;
    }
    return low + 1;
  };
  return { text, lineAt };
}

const DOC_PATTERN = /(?<![\w./-])((?:[\w.@-]+\/)*[\w.-]+\.md|README)(?![\w.-])/g;
// A heading starts and ends with a non-space: `README"` closing a shell string is no citation.
const QUOTED = /^\\?"([^"\\\s](?:[^"\\]{0,158}[^"\\\s])?)\\?"/;

/** The package directory (`packages/x`, `services/x`) a repository path lies in, if any. */
function packageOf(file: string): string | undefined {
  const match = /^((?:packages|services)\/[^/]+)\//.exec(file);
  return match?.[1];
}

/** The Markdown files a document reference may name, or undefined for a generic one. */
function resolveDoc(root: string, file: string, doc: string, before: string): string[] | undefined {
  if (doc !== 'README' && doc !== 'README.md') return [doc];
  if (/\b(?:each|every)\s+(?:service|package)'s\s+$/.test(before)) return undefined;
  if (/\broot\s+$/.test(before)) return ['README.md'];
  const own = packageOf(file);
  if (/\bpackage(?:'s)?\s+$/.test(before) && own) return [`${own}/README.md`];
  const named = /(?:@repo\/)?([\w-]+)`?(?:'s)?\s+$/.exec(before)?.[1];
  if (named) {
    for (const dir of ['packages', 'services']) {
      if (fs.existsSync(path.join(root, dir, named, 'README.md'))) return [`${dir}/${named}/README.md`];
    }
  }
  if (own && fs.existsSync(path.join(root, own, 'README.md'))) return [`${own}/README.md`, 'README.md'];
  return ['README.md'];
}

/** Reads `s` from `offset`: optional spaces and separator, then a quoted heading. */
function quotedAt(
  text: string,
  offset: number,
  separator: RegExp,
): { heading: string; end: number } | undefined {
  const rest = text.slice(offset, offset + 200);
  const sep = separator.exec(rest);
  if (!sep) return undefined;
  const quoted = QUOTED.exec(rest.slice(sep[0].length));
  if (!quoted?.[1]) return undefined;
  return { heading: quoted[1].replace(/\s+/g, ' ').trim(), end: offset + sep[0].length + quoted[0].length };
}

/** Every citation in one source file, plus the count of generic ones left unchecked. */
export function extractCitations(
  root: string,
  file: string,
  source: string,
): { citations: Citation[]; skipped: number } {
  const { text, lineAt } = flatten(source);
  const citations: Citation[] = [];
  let skipped = 0;
  for (const match of text.matchAll(DOC_PATTERN)) {
    const doc = match[1] ?? '';
    const start = match.index;
    let next = quotedAt(text, start + doc.length, /^[,:]?\s*/);
    if (!next) continue;
    const candidates = resolveDoc(root, file, doc, text.slice(Math.max(0, start - 60), start));
    const line = lineAt(start);
    for (;;) {
      const chain = [next.heading];
      let after = quotedAt(text, next.end, /^\s*[,:]\s*/);
      while (after) {
        chain.push(after.heading);
        next = after;
        after = quotedAt(text, next.end, /^\s*[,:]\s*/);
      }
      if (candidates) citations.push({ file, line, doc, candidates, chain });
      else skipped++;
      const more = quotedAt(text, next.end, /^\s*(?:;|,?\s*and|or)\s+/);
      if (!more) break;
      next = more;
    }
  }
  return { citations, skipped };
}

/** Scans every source and config file under `root` and checks each citation against the headings it names. */
export function scan(root: string): ScanResult {
  const headingsOf = new Map<string, Heading[] | undefined>();
  const load = (doc: string): Heading[] | undefined => {
    if (!headingsOf.has(doc)) {
      const file = path.join(root, doc);
      headingsOf.set(doc, fs.existsSync(file) ? extractHeadings(fs.readFileSync(file, 'utf8')) : undefined);
    }
    return headingsOf.get(doc);
  };
  let markdown: string[] | undefined;
  const markdownFiles = (): string[] => (markdown ??= listFiles(root, (name) => name.endsWith('.md')));
  const result: ScanResult = { citations: [], broken: [], skipped: 0 };
  for (const file of listFiles(root)) {
    const source = fs.readFileSync(path.join(root, file), 'utf8');
    if (!source.includes('README') && !source.includes('.md')) continue;
    const { citations, skipped } = extractCitations(root, file, source);
    result.skipped += skipped;
    for (const citation of citations) {
      result.citations.push(citation);
      let worst: { doc: string; failedAt: number } | undefined;
      let ok = false;
      for (const doc of citation.candidates) {
        const headings = load(doc);
        if (!headings) continue;
        const { found, failedAt } = findChain(headings, citation.chain);
        if (found) {
          ok = true;
          break;
        }
        if (!worst || failedAt > worst.failedAt) worst = { doc, failedAt };
      }
      if (ok) continue;
      const quoted = citation.chain.map((h) => `"${h}"`).join(', ');
      const where = `${citation.file}:${citation.line}: cites ${citation.candidates.join(' or ')}, ${quoted}, which does not exist`;
      let message: string;
      if (!worst) {
        message = `${where} (no such file)`;
      } else {
        const missing = citation.chain[worst.failedAt] ?? '';
        const hints: string[] = [];
        if (worst.failedAt > 0)
          hints.push(`no "${missing}" under "${citation.chain[worst.failedAt - 1] ?? ''}"`);
        const hint = closest(missing, load(worst.doc) ?? []);
        if (hint !== undefined) hints.push(`closest heading in ${worst.doc}: "${hint}"`);
        const elsewhere = markdownFiles().filter((doc) =>
          (load(doc) ?? []).some((h) => headingMatches(missing, h.text)),
        );
        if (elsewhere.length > 0) hints.push(`a heading of ${elsewhere.join(', ')}`);
        message = `${where} (${hints.join('; ')})`;
      }
      result.broken.push({ ...citation, message });
    }
  }
  return result;
}

if (require.main === module) {
  const started = performance.now();
  const root = path.resolve(process.argv[2] ?? path.join(__dirname, '..'));
  const { citations, broken, skipped } = scan(root);
  for (const citation of broken) console.log(citation.message);
  const ms = Math.round(performance.now() - started);
  console.log(
    `check-doc-references: ${citations.length} citations checked, ${broken.length} broken, ${skipped} of a generic README not checked (${ms} ms)`,
  );
  if (broken.length > 0) process.exit(1);
}

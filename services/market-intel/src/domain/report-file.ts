import { findNodeAtLocation, parseTree, printParseErrorCode, type Node, type ParseError } from 'jsonc-parser';
import { ScanReport } from '@repo/schemas';

/** One problem in a report file, located by line (1-based) and field path. */
export interface ReportFileProblem {
  line: number;
  field: string;
  message: string;
}

/** Thrown by {@link parseReportFile}: the file is not a valid scan report; nothing was imported. */
export class ReportFileError extends Error {
  /** Every problem found, in file order. */
  readonly problems: ReportFileProblem[];
  /**
   * @param file the file name, used in the message
   * @param problems the problems, at least one
   */
  constructor(file: string, problems: ReportFileProblem[]) {
    super(
      `${file} is not a valid scan report:\n${problems.map((p) => `  line ${p.line}, ${p.field}: ${p.message}`).join('\n')}`,
    );
    this.name = 'ReportFileError';
    this.problems = problems;
  }
}

function lineAt(text: string, offset: number): number {
  let line = 1;
  for (let i = 0; i < offset && i < text.length; i++) if (text.charCodeAt(i) === 10) line++;
  return line;
}

/** The deepest existing node along `path`, so a missing field points at its parent object. */
function nearestNode(root: Node, path: (string | number)[]): Node {
  for (let n = path.length; n >= 0; n--) {
    const node = findNodeAtLocation(root, path.slice(0, n));
    if (node) return node.parent?.type === 'property' && n > 0 ? node.parent : node;
  }
  return root;
}

/**
 * Parses and validates a scan report file (JSON) with the `ScanReport` schema.
 * @param text the file contents
 * @param file the file name for messages
 * @returns the validated report
 * @throws ReportFileError naming the line and field of every problem (syntax or schema)
 */
export function parseReportFile(text: string, file: string): ScanReport {
  const syntaxErrors: ParseError[] = [];
  const root = parseTree(text, syntaxErrors, { allowTrailingComma: false, disallowComments: true });
  if (syntaxErrors.length > 0 || !root) {
    const problems = syntaxErrors.map((e) => ({
      line: lineAt(text, e.offset),
      field: '(syntax)',
      message: printParseErrorCode(e.error),
    }));
    throw new ReportFileError(
      file,
      problems.length ? problems : [{ line: 1, field: '(file)', message: 'empty file' }],
    );
  }
  const result = ScanReport.safeParse(JSON.parse(text));
  if (result.success) return result.data;
  const problems = result.error.issues.map((issue) => {
    const path = issue.path.filter((p): p is string | number => typeof p !== 'symbol');
    const node = nearestNode(root, path);
    return {
      line: lineAt(text, node.offset),
      field: path.length ? path.join('.') : '(root)',
      message: issue.message,
    };
  });
  throw new ReportFileError(
    file,
    problems.sort((a, b) => a.line - b.line),
  );
}

/**
 * Moves every time in a report by the same offset so `generatedAt` becomes `now` (for demo data that
 * ships with fixed dates): item dates keep their distance to the scan time.
 * @param report a validated report
 * @param now the new generation time
 */
export function shiftReportToNow(report: ScanReport, now: Date): ScanReport {
  const delta = now.getTime() - Date.parse(report.generatedAt);
  const shift = (iso: string) => new Date(Date.parse(iso) + delta).toISOString();
  return {
    ...report,
    generatedAt: now.toISOString(),
    sectors: report.sectors.map((s) => ({
      ...s,
      trends: s.trends.map((t) => ({ ...t, date: shift(t.date) })),
    })),
    brief: report.brief ? { ...report.brief, date: now.toISOString().slice(0, 10) } : report.brief,
  };
}

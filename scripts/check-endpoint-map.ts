// Checks docs/architecture.md, "Where each endpoint lives" against the code: every operation of each
// service's OpenAPI document (the snapshots in packages/api-client/openapi/, which each service's
// contract test keeps equal to the document it serves) and every MCP tool of its entry points is in a
// row of that service; every operation and tool a row names exists; every source path a row names
// exists under services/<name>/src/ (under each service's for an `every service` row); and a row of
// one service names its route (an entry-points/ file), its use case (a domain/ file, or `none`) and
// its query (a data/ file, or `none`).
// In the first cell of a row, an operation is a code span `METHOD /path` (several methods joined by
// `/`; `{a,b}` in the path stands for each alternative, while `{id}` is a path parameter), and the
// tools are the code spans of snake_case names after `MCP`.
// Usage: tsx scripts/check-endpoint-map.ts [root]; exits 1 listing every problem.
import fs from 'node:fs';
import path from 'node:path';

/** The services whose endpoints the map covers, as named in the first cell of a row. */
export const MAPPED_SERVICES = ['market-intel', 'signal-feedback', 'skill-router'] as const;
type MappedService = (typeof MAPPED_SERVICES)[number];

const MAP_FILE = 'docs/architecture.md';
const MAP_HEADING = '## Where each endpoint lives';
const METHODS = 'GET|POST|PUT|PATCH|DELETE';
const OPERATION = new RegExp(`^((?:${METHODS})(?:/(?:${METHODS}))*) (/\\S*)$`);
const TOOL = /^[a-z][a-z0-9]*(?:_[a-z0-9]+)+$/;
const SOURCE_PATH = /^(?:entry-points|domain|data|adapters)\/[\w./-]+\.ts$/;

/** One row of the map: its service (or `every`), what it names, and its line in the document. */
export interface MapRow {
  line: number;
  service: MappedService | 'every';
  /** `METHOD /path`, one per operation the first cell names. */
  operations: string[];
  tools: string[];
  /** The code spans of the route, use case and query cells. */
  cells: [string[], string[], string[]];
  /** The use case and query cells as written. */
  text: [string, string];
}

/** The code spans of a Markdown table cell, in order. */
function codeSpans(cell: string): string[] {
  return [...cell.matchAll(/`([^`]+)`/g)].map((m) => m[1] ?? '');
}

/** `/a/{b,c}/{id}` -> `/a/b/{id}`, `/a/c/{id}`: a brace group holding a comma lists alternatives. */
export function expandPath(pathText: string): string[] {
  const group = /\{([^{}]*,[^{}]*)\}/.exec(pathText);
  if (!group) return [pathText];
  const [whole, inner = ''] = group;
  return inner.split(',').flatMap((alt) => expandPath(pathText.replace(whole, alt.trim())));
}

/**
 * The rows of the map in `markdown` (the text of docs/architecture.md).
 * @throws Error when the section or its table is missing, or a row names no known service
 */
export function parseMap(markdown: string): MapRow[] {
  const lines = markdown.split('\n');
  const start = lines.findIndex((l) => l.trim() === MAP_HEADING);
  if (start < 0) throw new Error(`${MAP_FILE} has no "${MAP_HEADING.slice(3)}" section`);
  const rows: MapRow[] = [];
  for (let i = start + 1; i < lines.length && !/^##? /.test(lines[i] ?? ''); i++) {
    const line = lines[i] ?? '';
    if (!line.startsWith('|') || /^\|\s*-/.test(line) || /^\|\s*endpoint\s*\|/.test(line)) continue;
    const cells = line.split('|').slice(1, -1);
    if (cells.length !== 4) throw new Error(`${MAP_FILE}:${i + 1}: a row has ${cells.length} cells, not 4`);
    const [first = '', route = '', useCase = '', query = ''] = cells;
    const name = first.trim().split(/[\s:]/)[0] ?? '';
    const service = name === 'every' ? 'every' : MAPPED_SERVICES.find((s) => s === name);
    if (!service) throw new Error(`${MAP_FILE}:${i + 1}: a row of an unknown service "${name}"`);
    const operations: string[] = [];
    const tools: string[] = [];
    const mcp = first.indexOf('MCP ');
    for (const span of codeSpans(mcp < 0 ? first : first.slice(0, mcp))) {
      const op = OPERATION.exec(span);
      if (op)
        for (const method of (op[1] ?? '').split('/'))
          for (const p of expandPath(op[2] ?? '')) operations.push(`${method} ${p}`);
    }
    if (mcp >= 0) tools.push(...codeSpans(first.slice(mcp)).filter((span) => TOOL.test(span)));
    rows.push({
      line: i + 1,
      service,
      operations,
      tools,
      cells: [codeSpans(route), codeSpans(useCase), codeSpans(query)],
      text: [useCase.trim(), query.trim()],
    });
  }
  if (rows.length === 0) throw new Error(`${MAP_FILE}: the "${MAP_HEADING.slice(3)}" section has no table`);
  return rows;
}

/** `METHOD /path` of every operation of a service's OpenAPI snapshot. */
export function documentedOperations(root: string, service: MappedService): string[] {
  const file = path.join(root, 'packages/api-client/openapi', `${service}.json`);
  const doc = JSON.parse(fs.readFileSync(file, 'utf8')) as {
    paths?: Record<string, Record<string, unknown>>;
  };
  return Object.entries(doc.paths ?? {}).flatMap(([p, item]) =>
    Object.keys(item)
      .filter((m) => new RegExp(`^(?:${METHODS})$`, 'i').test(m))
      .map((m) => `${m.toUpperCase()} ${p}`),
  );
}

/** Every `.ts` file under `dir`, recursively. */
function sources(dir: string): string[] {
  if (!fs.existsSync(dir)) return [];
  return fs.readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith('.ts') ? [full] : [];
  });
}

/**
 * The names of a service's MCP tools, read from its entry points: a `name: '<snake_case>'` in
 * entry-points/mcp/, and a `tool: { name: '<snake_case>'` anywhere in entry-points/ (market-intel's
 * scout lists declare their tools beside their routes).
 */
export function mcpTools(root: string, service: MappedService): string[] {
  const entry = path.join(root, 'services', service, 'src/entry-points');
  const names = new Set<string>();
  for (const file of sources(entry)) {
    const text = fs.readFileSync(file, 'utf8');
    const inMcp = path.relative(entry, file).startsWith(`mcp${path.sep}`);
    const pattern = inMcp
      ? /\bname: '([a-z][a-z0-9]*(?:_[a-z0-9]+)+)'/g
      : /\btool: \{\s*name: '([a-z][a-z0-9]*(?:_[a-z0-9]+)+)'/g;
    for (const m of text.matchAll(pattern)) names.add(m[1] ?? '');
  }
  return [...names];
}

/** Every problem of the map under `root`, one line each (empty when the map is complete and current). */
export function checkEndpointMap(root: string): string[] {
  const problems: string[] = [];
  let rows: MapRow[];
  try {
    rows = parseMap(fs.readFileSync(path.join(root, MAP_FILE), 'utf8'));
  } catch (error) {
    return [error instanceof Error ? error.message : String(error)];
  }
  for (const service of MAPPED_SERVICES) {
    const own = rows.filter((r) => r.service === service);
    const compare = (kind: string, actual: string[], mapped: string[], where: string) => {
      for (const name of actual)
        if (!mapped.includes(name))
          problems.push(`${MAP_FILE}: ${service} ${kind} ${name} is in no row (${where})`);
      for (const row of own)
        for (const name of kind === 'operation' ? row.operations : row.tools)
          if (!actual.includes(name))
            problems.push(`${MAP_FILE}:${row.line}: ${service} has no ${kind} ${name} (${where})`);
    };
    compare(
      'operation',
      documentedOperations(root, service),
      own.flatMap((r) => r.operations),
      `packages/api-client/openapi/${service}.json`,
    );
    compare(
      'MCP tool',
      mcpTools(root, service),
      own.flatMap((r) => r.tools),
      `services/${service}/src/entry-points`,
    );
  }
  for (const row of rows) {
    const services = row.service === 'every' ? MAPPED_SERVICES : [row.service];
    for (const span of row.cells.flat())
      if (SOURCE_PATH.test(span))
        for (const service of services)
          if (!fs.existsSync(path.join(root, 'services', service, 'src', span)))
            problems.push(`${MAP_FILE}:${row.line}: services/${service}/src/${span} does not exist`);
    if (row.service === 'every') continue;
    const [route, useCase, query] = row.cells;
    if (!route.some((s) => s.startsWith('entry-points/')))
      problems.push(`${MAP_FILE}:${row.line}: the route cell names no entry-points/ file`);
    if (!useCase.some((s) => s.startsWith('domain/')) && !/^none\b/.test(row.text[0]))
      problems.push(`${MAP_FILE}:${row.line}: the use case cell names no domain/ file (or says none)`);
    if (!query.some((s) => s.startsWith('data/')) && !/^none\b/.test(row.text[1]))
      problems.push(`${MAP_FILE}:${row.line}: the query cell names no data/ file (or says none)`);
  }
  return problems;
}

if (require.main === module) {
  const root = path.resolve(process.argv[2] ?? path.join(__dirname, '..'));
  const problems = checkEndpointMap(root);
  for (const problem of problems) console.log(problem);
  console.log(`check-endpoint-map: ${problems.length} problem(s)`);
  if (problems.length > 0) process.exit(1);
}

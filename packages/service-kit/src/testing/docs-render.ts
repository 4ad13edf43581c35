import { mkdirSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

/**
 * The Chromium that browser tests drive: `CHROMIUM_PATH`, else Debian's `/usr/bin/chromium` (what
 * `ensure_chromium` of scripts/lib.sh installs).
 */
export function chromiumPath(): string {
  return process.env.CHROMIUM_PATH?.trim() || '/usr/bin/chromium';
}

/**
 * Where a test saves a screenshot that the repository keeps: `committed` with `UPDATE_SCREENSHOT=1`
 * (refreshing the committed file), else a file of the same name in the system's temporary directory,
 * so an ordinary test run leaves the working tree as it was.
 * @param committed absolute path of the committed PNG, e.g. `<repo>/docs/market-intel-docs.png`
 */
export function screenshotPath(committed: string): string {
  return process.env.UPDATE_SCREENSHOT === '1' ? committed : path.join(os.tmpdir(), path.basename(committed));
}

/**
 * The anchors GitHub gives the headings of a Markdown file (`### Paying, in three steps` ->
 * `paying-in-three-steps`: lower case, punctuation other than `-` and `_` dropped, spaces to `-`), to
 * check that a link into a README names a section that exists. Repeated headings get `-1`, `-2`...
 * @param markdown the file's text
 */
export function markdownAnchors(markdown: string): string[] {
  const seen = new Map<string, number>();
  const anchors: string[] = [];
  let fenced = false;
  for (const line of markdown.split('\n')) {
    // A `#` line inside a fenced code block is a shell comment, not a heading.
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced;
    const heading = fenced ? undefined : /^#{1,6}[ \t]+(.+?)[ \t#]*$/.exec(line)?.[1];
    if (heading === undefined) continue;
    const base = heading
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-');
    const n = seen.get(base) ?? 0;
    seen.set(base, n + 1);
    anchors.push(n === 0 ? base : `${base}-${n}`);
  }
  return anchors;
}

/** Options of {@link expectDocsRender}. */
export interface DocsRenderOptions {
  /**
   * Saves a PNG of the page here once everything passed: the viewport (1280 × 1600 CSS pixels) from
   * the `expand` operation's section (else the top). Absent: no screenshot. See {@link screenshotPath}.
   */
  screenshot?: string;
  /** The `operationId` of the operation scrolled to at the end (for the screenshot); default none. */
  expand?: string;
  /** Milliseconds to wait for the reference to show its first operation; default 30000. */
  timeoutMs?: number;
  /** The browser's `prefers-color-scheme`; default `light`. */
  colorScheme?: 'light' | 'dark';
}

/** What {@link expectDocsRender} saw. */
export interface DocsRender {
  /** `METHOD /path` of every operation the page shows (upper-case method), sorted. */
  operations: string[];
  /** Whether the page came up in dark mode (it follows the browser's `prefers-color-scheme`). */
  dark: boolean;
}

/** A Scalar operation section's id: `api-1/tag/<tag>/<METHOD>/<path>`, or `api-1/<METHOD>/<path>` untagged. */
const OPERATION_SECTION = /\/(GET|PUT|POST|DELETE|OPTIONS|HEAD|PATCH|TRACE)(\/.*)$/;

/** `METHOD /path` of the operation with `operationId` in an OpenAPI document. */
function operationById(doc: unknown, operationId: string): string | undefined {
  const paths =
    (doc as { paths?: Record<string, Record<string, { operationId?: unknown }>> } | null)?.paths ?? {};
  for (const [p, item] of Object.entries(paths))
    for (const [m, op] of Object.entries(item))
      if (METHODS.has(m) && op.operationId === operationId) return `${m.toUpperCase()} ${p}`;
  return undefined;
}

const METHODS = new Set(['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace']);

/** `METHOD /path` of every operation of an OpenAPI document, sorted. */
function documentedOperations(doc: unknown): string[] {
  const paths = (doc as { paths?: Record<string, Record<string, unknown>> } | null)?.paths ?? {};
  return Object.entries(paths)
    .flatMap(([p, item]) =>
      Object.keys(item)
        .filter((m) => METHODS.has(m))
        .map((m) => `${m.toUpperCase()} ${p}`),
    )
    .sort();
}

// Runs in the page before its own scripts: every Content-Security-Policy violation is kept, whether or
// not the browser also logs it.
const RECORD_CSP_VIOLATIONS = `
window.__cspViolations = [];
document.addEventListener('securitypolicyviolation', function (e) {
  window.__cspViolations.push(e.violatedDirective + ' blocked ' + (e.blockedURI || 'inline code'));
});
`;

/**
 * Opens a service's reference page, `${baseUrl}/docs`, in headless Chromium (playwright-core, the
 * browser at {@link chromiumPath}) and checks that it works as docs/architecture.md, "Routes own their
 * contracts" describes it: Scalar's API reference renders, with its search, and shows every operation
 * of `${baseUrl}/openapi.json` (method and path) and no other (scrolling through the page, which
 * renders sections as they come into view), and nothing went wrong on the way: no console error, no
 * uncaught page error, no Content-Security-Policy violation, no request answered 400 or more or failed
 * (a request to another host is refused by the page's policy, so it shows as a violation).
 * Optionally scrolls to one operation and saves a screenshot. Call it against the running service
 * (behind its real helmet configuration), e.g. from the service's contract test:
 *
 * ```ts
 * await expectDocsRender(h.baseUrl, {
 *   expand: 'getGaps',
 *   screenshot: screenshotPath(path.resolve(__dirname, '../../../docs/market-intel-docs.png')),
 * });
 * ```
 *
 * Give the test a timeout of about a minute: it launches a browser and opens every operation.
 * @param baseUrl the service's origin, e.g. `http://127.0.0.1:3001` (no trailing slash)
 * @returns the operations the page shows
 * @throws Error listing every problem found (operations missing from the page or extra on it, console
 *   errors, CSP violations, failed requests, no search), or when `expand` names no operation
 *   of the page, `/openapi.json` does not answer 200, the reference does not render within `timeoutMs`,
 *   or Chromium cannot be launched
 */
export async function expectDocsRender(
  baseUrl: string,
  options: DocsRenderOptions = {},
): Promise<DocsRender> {
  const timeout = options.timeoutMs ?? 30_000;
  const served = await fetch(`${baseUrl}/openapi.json`);
  if (served.status !== 200) throw new Error(`${baseUrl}/openapi.json answered ${served.status}`);
  const documentBody: unknown = await served.json();
  const expected = documentedOperations(documentBody);
  // Loaded on first use: most suites that import the testing helpers never open a browser.
  const { chromium } = await import('playwright-core');
  const browser = await chromium.launch({ executablePath: chromiumPath(), args: ['--no-sandbox'] });
  try {
    const context = await browser.newContext({
      viewport: { width: 1280, height: 1600 },
      colorScheme: options.colorScheme ?? 'light',
    });
    const page = await context.newPage();
    const problems: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(`console error: ${m.text()}`);
    });
    page.on('pageerror', (e) => problems.push(`page error: ${e.message}`));
    page.on('response', (r) => {
      if (r.status() >= 400) problems.push(`${r.status()} ${r.url()}`);
    });
    page.on('requestfailed', (r) =>
      problems.push(`request failed: ${r.url()} (${r.failure()?.errorText ?? '?'})`),
    );
    await page.addInitScript({ content: RECORD_CSP_VIOLATIONS });

    await page.goto(`${baseUrl}/docs`);
    // Polled with page.evaluate (the DevTools protocol, which the page's CSP does not govern):
    // waitForFunction re-evaluates its predicate with eval inside the page, which `script-src 'self'`
    // refuses whenever the first check is not already true.
    const firstSection = `[...document.querySelectorAll('section[id]')].some((s) => ${OPERATION_SECTION.toString()}.test(s.id))`;
    const renderedBy = Date.now() + timeout;
    while (!((await page.evaluate(firstSection)) as boolean)) {
      if (Date.now() > renderedBy)
        throw new Error(`${baseUrl}/docs rendered no operation within ${timeout} ms: ${problems.join('; ')}`);
      await page.waitForTimeout(50);
    }
    // Scalar renders the sections as they come into view: scroll until no new one appears.
    const shown = new Set<string>();
    const ids = new Map<string, string>();
    // Until four rounds in a row (a second and more) bring no new operation.
    for (let round = 0, quiet = 0; round < 400 && quiet < 4; round++) {
      const before = shown.size;
      const sectionIds = (await page.evaluate(
        '[...document.querySelectorAll("section[id]")].map((s) => s.id)',
      )) as string[];
      for (const id of sectionIds) {
        const m = OPERATION_SECTION.exec(id);
        if (!m) continue;
        const op = `${m[1]} ${decodeURIComponent(m[2] ?? '')}`;
        shown.add(op);
        if (!ids.has(op)) ids.set(op, id);
      }
      quiet = shown.size === before ? quiet + 1 : 0;
      await page.evaluate('window.scrollBy(0, window.innerHeight)');
      await page.waitForTimeout(250);
    }
    const operations = [...shown].sort();
    for (const op of expected) if (!shown.has(op)) problems.push(`not on the page: ${op}`);
    for (const op of operations)
      if (!expected.includes(op)) problems.push(`on the page but not documented: ${op}`);
    const search = await page.locator('.sidebar-search, [role="search"], button:has-text("Search")').count();
    if (search === 0) problems.push('no search on the page');
    const dark = (await page.evaluate('document.body.classList.contains("dark-mode")')) as boolean;
    const violations = (await page.evaluate('window.__cspViolations')) as unknown;
    // zod, inside Scalar's bundle, probes once whether eval is allowed (`Function('')` in a try/catch)
    // and works without it when it is not: that refusal is the policy holding, not a fault.
    if (Array.isArray(violations))
      for (const v of violations)
        if (String(v) !== 'script-src blocked eval') problems.push(`CSP violation: ${String(v)}`);
    if (problems.length > 0)
      throw new Error(`${baseUrl}/docs does not render cleanly:\n- ${problems.join('\n- ')}`);

    if (options.expand !== undefined) {
      const op = operationById(documentBody, options.expand);
      const id = op === undefined ? undefined : ids.get(op);
      if (id === undefined) throw new Error(`${baseUrl}/docs shows no operation ${options.expand}`);
      await page.evaluate(`document.getElementById(${JSON.stringify(id)}).scrollIntoView()`);
    } else await page.evaluate('window.scrollTo(0, 0)');
    if (options.screenshot !== undefined) {
      mkdirSync(path.dirname(options.screenshot), { recursive: true });
      await page.screenshot({ path: options.screenshot });
    }
    return { operations, dark };
  } finally {
    await browser.close();
  }
}

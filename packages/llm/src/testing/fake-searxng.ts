import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A result as SearXNG's JSON API returns it (the fields our provider reads). */
export interface FakeSearxngResult {
  title: string;
  url: string;
  content: string;
}

/** Options of {@link startFakeSearxng}. */
export interface FakeSearxngOptions {
  /** The results of every query, or a function of the query (default: three results naming the query). */
  results?: FakeSearxngResult[] | ((query: string) => FakeSearxngResult[]);
  /** Simulates an instance whose settings do not enable the `json` format: `format=json` answers 403. */
  jsonDisabled?: boolean;
}

/** A running fake SearXNG instance. */
export interface FakeSearxng {
  /** Base URL, e.g. `http://127.0.0.1:40124`. */
  baseUrl: string;
  /** Queries received by `/search`, in order (the empty probe query included). */
  queries: string[];
  /** Makes the next `times` `/search` requests answer `status`. */
  fail(next: { status: number; times: number }): void;
  /** Stops the server. */
  close(): Promise<void>;
}

function defaultResults(query: string): FakeSearxngResult[] {
  const slug = encodeURIComponent(query.toLowerCase().replace(/\s+/g, '-')).slice(0, 60);
  return [1, 2, 3].map((n) => ({
    title: `${query} — source ${n}`,
    url: `https://example.org/${slug}/${n}`,
    content: `Finding ${n} about ${query}: market size, competitors and pricing.`,
  }));
}

/**
 * Starts a local HTTP server speaking SearXNG's JSON search API for tests: `GET /search?q=&format=json`
 * answers `{ query, number_of_results, results: [{ title, url, content, engine, score }] }`; an empty
 * `q` answers 400 `{ error: "No query" }` and a disabled json format answers 403, as SearXNG does.
 * @param options canned results and the json switch
 */
export async function startFakeSearxng(options: FakeSearxngOptions = {}): Promise<FakeSearxng> {
  const queries: string[] = [];
  let failure: { status: number; times: number } | null = null;
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    const reply = (status: number, body: unknown) => {
      const text = JSON.stringify(body);
      res.writeHead(status, {
        'content-type': 'application/json',
        'content-length': Buffer.byteLength(text),
      });
      res.end(text);
    };
    if (url.pathname !== '/search') return reply(404, { error: 'not found' });
    const q = url.searchParams.get('q') ?? '';
    queries.push(q);
    if (failure && failure.times > 0) {
      failure.times -= 1;
      return reply(failure.status, { error: `scripted failure ${failure.status}` });
    }
    if (url.searchParams.get('format') === 'json' && options.jsonDisabled) {
      res.writeHead(403, { 'content-type': 'text/html' });
      return res.end('<h1>Forbidden</h1>');
    }
    if (!q) return reply(400, { error: 'No query' });
    const results =
      typeof options.results === 'function' ? options.results(q) : (options.results ?? defaultResults(q));
    reply(200, {
      query: q,
      number_of_results: results.length,
      results: results.map((r, i) => ({ ...r, engine: 'fake', score: results.length - i })),
      answers: [],
      suggestions: [],
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    baseUrl: `http://127.0.0.1:${port}`,
    queries,
    fail(next) {
      failure = { ...next };
    },
    close: () =>
      new Promise<void>((resolve, reject) => {
        server.closeAllConnections();
        server.close((error) => (error ? reject(error) : resolve()));
      }),
  };
}

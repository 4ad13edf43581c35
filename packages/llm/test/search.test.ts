import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  MAX_RESPONSE_BYTES,
  SearchConfigError,
  SearchUnavailableError,
  createSearxngProvider,
  createTavilyProvider,
  isTransient,
} from '../src';
import { startFakeSearxng, type FakeSearxng } from '../src/testing';

let searx: FakeSearxng | undefined;
let raw: Server | undefined;

afterEach(async () => {
  await searx?.close();
  searx = undefined;
  if (raw) await new Promise<void>((resolve) => raw!.close(() => resolve()));
  raw = undefined;
});

/** A plain HTTP server answering every request with `handler`, for the provider's edge cases. */
async function startRaw(handler: Parameters<typeof createServer>[1]): Promise<string> {
  raw = createServer(handler);
  await new Promise<void>((resolve) => raw!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
}

describe('SearXNG provider', () => {
  it('When SearXNG answers results, then title, url and content become search results up to the limit', async () => {
    searx = await startFakeSearxng({
      results: [
        { title: 'A', url: 'https://a.example/1', content: '  first\n snippet ' },
        { title: 'B', url: 'https://b.example/2', content: 'second' },
        { title: 'dup', url: 'https://a.example/1', content: 'duplicate' },
        { title: 'C', url: 'https://c.example/3', content: 'third' },
      ],
    });
    const provider = createSearxngProvider({ baseUrl: searx.baseUrl, timeoutMs: 2000 });
    await expect(provider.search('vertical saas pricing', { limit: 2 })).resolves.toEqual([
      { title: 'A', url: 'https://a.example/1', snippet: 'first snippet' },
      { title: 'B', url: 'https://b.example/2', snippet: 'second' },
    ]);
    expect(searx.queries).toEqual(['vertical saas pricing']);
    const all = await provider.search('x');
    expect(all.map((r) => r.url)).toEqual([
      'https://a.example/1',
      'https://b.example/2',
      'https://c.example/3',
    ]);
  });

  it('When results carry non-http URLs or no title, then they are dropped or titled by their URL', async () => {
    searx = await startFakeSearxng({
      results: [
        { title: '', url: 'https://x.example/', content: 'ok' },
        { title: 'js', url: 'javascript:alert(1)', content: 'bad' },
      ],
    });
    const provider = createSearxngProvider({ baseUrl: searx.baseUrl });
    await expect(provider.search('q')).resolves.toEqual([
      { title: 'https://x.example/', url: 'https://x.example/', snippet: 'ok' },
    ]);
  });

  it('When the query is blank, then no request is made and the result is empty', async () => {
    searx = await startFakeSearxng();
    const provider = createSearxngProvider({ baseUrl: searx.baseUrl });
    await expect(provider.search('   ')).resolves.toEqual([]);
    expect(searx.queries).toEqual([]);
  });

  it('When the json format is disabled (403), then search throws SearchConfigError and probe reports config', async () => {
    searx = await startFakeSearxng({ jsonDisabled: true });
    const provider = createSearxngProvider({ baseUrl: searx.baseUrl });
    const error = await provider.search('q').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SearchConfigError);
    expect(isTransient(error)).toBe(false);
    await expect(provider.probe()).resolves.toMatchObject({
      ok: false,
      errorClass: 'config',
      error: expect.stringContaining('json'),
    });
  });

  it('When the instance is healthy, then probe is ok and sends the empty query that queries no engine', async () => {
    searx = await startFakeSearxng();
    const provider = createSearxngProvider({ baseUrl: searx.baseUrl });
    await expect(provider.probe()).resolves.toEqual({ ok: true, error: null, errorClass: null });
    expect(searx.queries).toEqual(['']);
  });

  it('When SearXNG rate-limits (429) or fails (502), then SearchUnavailableError (transient) is thrown and probe reports upstream', async () => {
    searx = await startFakeSearxng();
    const provider = createSearxngProvider({ baseUrl: searx.baseUrl });
    searx.fail({ status: 429, times: 1 });
    const error = await provider.search('q').catch((e: unknown) => e);
    expect(error).toBeInstanceOf(SearchUnavailableError);
    expect(isTransient(error)).toBe(true);
    searx.fail({ status: 502, times: 1 });
    await expect(provider.probe()).resolves.toMatchObject({ ok: false, errorClass: 'upstream' });
  });

  it('When nothing listens, then search throws SearchUnavailableError and probe reports upstream', async () => {
    const url = await startRaw((_req, res) => res.end());
    await new Promise<void>((resolve) => raw!.close(() => resolve()));
    raw = undefined;
    const provider = createSearxngProvider({ baseUrl: url });
    await expect(provider.search('q')).rejects.toBeInstanceOf(SearchUnavailableError);
    await expect(provider.probe()).resolves.toMatchObject({ ok: false, errorClass: 'upstream' });
  });

  it('When the instance does not answer within the timeout, then SearchUnavailableError names the deadline', async () => {
    const url = await startRaw((_req, res) => {
      setTimeout(() => res.end('{}'), 400);
    });
    const provider = createSearxngProvider({ baseUrl: url, timeoutMs: 50 });
    await expect(provider.search('q')).rejects.toThrow(/within 50 ms/);
  });

  it('When the body exceeds the size limit, then SearchUnavailableError is thrown', async () => {
    const url = await startRaw((_req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' });
      const chunk = Buffer.alloc(64 * 1024, 32);
      let sent = 0;
      const pump = () => {
        while (sent <= MAX_RESPONSE_BYTES) {
          sent += chunk.length;
          if (!res.write(chunk)) return res.once('drain', pump);
        }
        res.end();
      };
      pump();
    });
    const provider = createSearxngProvider({ baseUrl: url });
    await expect(provider.search('q')).rejects.toThrow(/exceeds/);
  });

  it('When the answer is not JSON, then SearchUnavailableError is thrown', async () => {
    const url = await startRaw((_req, res) => res.end('<html>proxy error</html>'));
    await expect(createSearxngProvider({ baseUrl: url }).search('q')).rejects.toThrow(/not JSON/);
  });
});

describe('Tavily provider', () => {
  it('When Tavily answers, then the request carries the bearer key and max_results and results are normalised', async () => {
    let seen: { method?: string; url?: string; auth?: string; body?: unknown } = {};
    const url = await startRaw((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        seen = {
          method: req.method,
          url: req.url,
          auth: req.headers.authorization,
          body: JSON.parse(Buffer.concat(chunks).toString() || 'null'),
        };
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(
          JSON.stringify({
            query: 'q',
            results: [{ title: 'T', url: 'https://t.example/', content: 'tavily text', score: 0.9 }],
          }),
        );
      });
    });
    const provider = createTavilyProvider({ apiKey: 'tvly-test', baseUrl: url, timeoutMs: 2000 });
    await expect(provider.search('crm for dentists', { limit: 3 })).resolves.toEqual([
      { title: 'T', url: 'https://t.example/', snippet: 'tavily text' },
    ]);
    expect(seen).toEqual({
      method: 'POST',
      url: '/search',
      auth: 'Bearer tvly-test',
      body: { query: 'crm for dentists', max_results: 3, search_depth: 'basic' },
    });
  });

  it('When the key is rejected (401), then search throws SearchConfigError and probe (GET /usage) reports config', async () => {
    const paths: string[] = [];
    const url = await startRaw((req, res) => {
      paths.push(`${req.method} ${req.url}`);
      res.writeHead(401, { 'content-type': 'application/json' });
      res.end('{"detail":{"error":"Unauthorized"}}');
    });
    const provider = createTavilyProvider({ apiKey: 'tvly-bad', baseUrl: url });
    await expect(provider.search('q')).rejects.toBeInstanceOf(SearchConfigError);
    await expect(provider.probe()).resolves.toMatchObject({ ok: false, errorClass: 'config' });
    expect(paths).toEqual(['POST /search', 'GET /usage']);
  });

  it('When no key is given, then creating the provider throws SearchConfigError', () => {
    expect(() => createTavilyProvider({ apiKey: '' })).toThrow(SearchConfigError);
  });
});

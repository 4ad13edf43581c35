import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { firstRequest } from '../src/http';

let server: Server;
let base: string;
/** Every request the server got: method, path and body. */
const seen: { method: string; path: string; body: string }[] = [];

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString('utf8')));
    req.on('end', () => {
      seen.push({ method: req.method ?? '', path: req.url ?? '', body });
      const [path, status] = (req.url ?? '').split('?');
      if (path === '/moved') {
        res.writeHead(Number(status), { location: '/target' });
        res.end();
      } else if (path === '/loop') {
        res.writeHead(302, { location: '/loop' });
        res.end();
      } else {
        res.setHeader('set-cookie', ['a=1', 'b=2']);
        res.setHeader('content-type', 'application/json');
        res.end(JSON.stringify({ method: req.method, body }));
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(async () => {
  server.closeAllConnections();
  await new Promise((resolve) => server.close(resolve));
});

const post = {
  method: 'POST' as const,
  headers: { 'content-type': 'application/json' },
  body: '{"idea":"x"}',
};

describe('firstRequest (the first request of agent-pay, over node:http)', () => {
  it('When the answer is plain, then the Response has the status, every header and the body', async () => {
    const response = await firstRequest(`${base}/target`, post);
    expect(response.status).toBe(200);
    expect(response.headers.getSetCookie()).toEqual(['a=1', 'b=2']);
    expect(await response.json()).toEqual({ method: 'POST', body: '{"idea":"x"}' });
  });

  it('When a POST is redirected with 307, then the method and body are kept; with 303 or 302, then it becomes a GET', async () => {
    expect(await (await firstRequest(`${base}/moved?307`, post)).json()).toEqual({
      method: 'POST',
      body: '{"idea":"x"}',
    });
    expect(await (await firstRequest(`${base}/moved?303`, post)).json()).toEqual({ method: 'GET', body: '' });
    expect(await (await firstRequest(`${base}/moved?302`, post)).json()).toEqual({ method: 'GET', body: '' });
  });

  it('When redirects loop, then it fails after 20 like fetch; when nothing listens, then it fails with the cause', async () => {
    await expect(
      firstRequest(`${base}/loop`, { method: 'GET', headers: {}, body: undefined }),
    ).rejects.toMatchObject({
      cause: { message: 'too many redirects' },
    });
    expect(seen.filter((r) => r.path === '/loop')).toHaveLength(21);
    await expect(
      firstRequest('http://127.0.0.1:1/', { method: 'GET', headers: {}, body: undefined }),
    ).rejects.toMatchObject({ message: 'fetch failed', cause: { code: 'ECONNREFUSED' } });
  });
});

import http from 'node:http';
import type { AddressInfo } from 'node:net';

/** A stub JSON-RPC endpoint: `answer` gets each parsed request and writes the response. */
export async function stubRpc(
  answer: (request: { method: string; params: unknown[] }, res: http.ServerResponse) => void,
) {
  const requests: { method: string; params: unknown[]; url: string | undefined }[] = [];
  const server = http.createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8').on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      const request = JSON.parse(body) as { method: string; params: unknown[] };
      requests.push({ ...request, url: req.url });
      answer(request, res);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/devnet?key=k`,
    requests,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** Writes a JSON answer with its length. */
export function json(res: http.ServerResponse, status: number, body: string): void {
  res
    .writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) })
    .end(body);
}

/** A proxy to the JSON-RPC endpoint at `target` (the ledger) that records every request it forwards. */
export async function proxyTo(target: string) {
  return stubRpc((request, res) => {
    fetch(target, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...request }),
    })
      .then(async (answer) => res.writeHead(answer.status).end(await answer.text()))
      .catch(() => res.writeHead(502).end());
  });
}

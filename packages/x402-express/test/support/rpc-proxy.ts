import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** A JSON-RPC proxy in front of the local ledger that counts the methods it forwards. */
export interface CountingRpcProxy {
  /** The proxy's RPC URL. */
  url: string;
  /** How many times each method was called through the proxy so far. */
  calls: Map<string, number>;
  /** The `params` of every `getSignatureStatuses` call, in order. */
  statusBatches: string[][];
  close(): Promise<void>;
}

/**
 * Starts a proxy forwarding every POST to `target` unchanged, counting JSON-RPC methods.
 * @param target the ledger's RPC URL
 */
export async function countingRpcProxy(target: string): Promise<CountingRpcProxy> {
  const calls = new Map<string, number>();
  const statusBatches: string[][] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const body = Buffer.concat(chunks).toString('utf8');
      const requests = [JSON.parse(body) as unknown].flat() as { method?: string; params?: unknown[] }[];
      for (const { method, params } of requests) {
        if (typeof method === 'string') calls.set(method, (calls.get(method) ?? 0) + 1);
        if (method === 'getSignatureStatuses') statusBatches.push(params?.[0] as string[]);
      }
      fetch(target, { method: 'POST', headers: { 'content-type': 'application/json' }, body })
        .then(async (answer) => {
          res.writeHead(answer.status, { 'content-type': 'application/json' });
          res.end(await answer.text());
        })
        .catch(() => {
          res.writeHead(502);
          res.end();
        });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    calls,
    statusBatches,
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

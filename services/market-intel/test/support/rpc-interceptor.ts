import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A JSON-RPC hop between a client under test and the local ledger (for the refund tests, README
 * "Refunds"): it forwards every call unchanged, records the method of each, and can run a step of
 * the test just before it forwards the next call of a given method, so that the test acts at a
 * known point of the client's work (e.g. between building a refund and recording it) without
 * replacing any of the project's code.
 */
export class RpcInterceptor {
  /** The methods called through this hop, in order. */
  readonly calls: string[] = [];
  /** The URL to give the client under test (set once listening). */
  url = '';
  private readonly steps = new Map<string, () => Promise<void>>();
  private readonly server: Server;

  private constructor(private readonly target: string) {
    this.server = createServer((req, res) => void this.forward(req, res));
  }

  /**
   * Listens on a free loopback port and forwards to `target`.
   * @param target the JSON-RPC URL of the ledger
   */
  static async start(target: string): Promise<RpcInterceptor> {
    const interceptor = new RpcInterceptor(target);
    await new Promise<void>((resolve) => interceptor.server.listen(0, '127.0.0.1', resolve));
    const { port } = interceptor.server.address() as AddressInfo;
    interceptor.url = `http://127.0.0.1:${port}`;
    return interceptor;
  }

  /**
   * Runs `step` once, before the next call of `method` is forwarded (the call waits for it).
   * @returns settles when the step has run: rejected with its error if it failed
   */
  beforeNext(method: string, step: () => Promise<void>): Promise<void> {
    return new Promise((resolve, reject) => {
      this.steps.set(method, () => step().then(resolve, (err: unknown) => reject(err as Error)));
    });
  }

  /** Stops listening and drops open connections. */
  async close(): Promise<void> {
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private async forward(req: IncomingMessage, res: ServerResponse): Promise<void> {
    try {
      const chunks: Buffer[] = [];
      for await (const chunk of req) chunks.push(chunk as Buffer);
      const body = Buffer.concat(chunks).toString('utf8');
      const calls = [JSON.parse(body) as unknown].flat() as { method?: unknown }[];
      for (const call of calls) {
        const method = String(call.method);
        this.calls.push(method);
        const step = this.steps.get(method);
        if (step) {
          this.steps.delete(method);
          await step();
        }
      }
      const answer = await fetch(this.target, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body,
      });
      res.writeHead(answer.status, { 'content-type': 'application/json' });
      res.end(await answer.text());
    } catch (err) {
      res.writeHead(502, { 'content-type': 'text/plain' });
      res.end(err instanceof Error ? err.message : String(err));
    }
  }
}

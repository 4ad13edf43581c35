import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';

/** A local HTTP server on 127.0.0.1: where it answers, and how to stop it. */
export interface LoopbackServer {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  baseUrl: string;
  /** Stops listening and drops every open connection (keep-alive ones included). */
  close(): Promise<void>;
}

/**
 * Starts the HTTP server of a local stand-in for providers (the skill endpoints of `local-skills.ts`,
 * the MCP servers of `local-mcp-servers.ts`; README, "Running" and "Tests") on 127.0.0.1 and a free port
 * (port 0). Every request runs `handle`; when it rejects, the request answers 500 (or, when the
 * headers were already sent, its answer just ends), so a broken stand-in never leaves a caller
 * waiting.
 * @param handle answers one request
 */
export async function startLoopbackServer(
  handle: (req: IncomingMessage, res: ServerResponse) => Promise<void>,
): Promise<LoopbackServer> {
  const server: Server = createServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (!address || typeof address === 'string') throw new Error('no address');
  return {
    baseUrl: `http://127.0.0.1:${address.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

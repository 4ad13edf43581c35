import type { IncomingMessage } from 'node:http';
import { startLoopbackServer } from './loopback-server';

/** How a local skill endpoint answers. */
export type SkillBehaviour =
  /** GET 200; POST answers `respond(input)` as JSON. */
  | { kind: 'healthy'; respond: (input: unknown) => unknown; delayMs?: number }
  /** Every request waits `delayMs` before answering like `healthy`. */
  | { kind: 'slow'; delayMs: number; respond: (input: unknown) => unknown }
  /** Every request answers this status with a JSON error body. */
  | { kind: 'status'; status: number }
  /** GET 200; POST answers 200 with a body that is not JSON. */
  | { kind: 'not_json' };

/** A local HTTP server hosting skill endpoints at `/<name>`, each with a behaviour that can change. */
export interface LocalSkills {
  /** `http://127.0.0.1:<port>` */
  baseUrl: string;
  /** The endpoint URL of `name`. */
  url(name: string): string;
  /** Sets (or replaces) the behaviour of `/<name>`. */
  set(name: string, behaviour: SkillBehaviour): void;
  /** Requests received per endpoint name, by method. */
  hits(name: string): { GET: number; POST: number };
  /** The last JSON body POSTed to `/<name>`. */
  lastInput(name: string): unknown;
  close(): Promise<void>;
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  const text = Buffer.concat(chunks).toString('utf8');
  return text ? (JSON.parse(text) as unknown) : undefined;
}

/**
 * Starts local skill endpoints on 127.0.0.1 and a free port (port 0): a stand-in for skill providers,
 * speaking plain HTTP + JSON (POST the input, get the output; GET is the health probe). Unknown names
 * answer 404.
 */
export async function startLocalSkills(): Promise<LocalSkills> {
  const behaviours = new Map<string, SkillBehaviour>();
  const counts = new Map<string, { GET: number; POST: number }>();
  const inputs = new Map<string, unknown>();
  const server = await startLoopbackServer(async (req, res) => {
    const name = (req.url ?? '/').split('?')[0]!.replace(/^\//, '');
    const b = behaviours.get(name);
    const method = req.method === 'POST' ? 'POST' : 'GET';
    const c = counts.get(name) ?? { GET: 0, POST: 0 };
    c[method] += 1;
    counts.set(name, c);
    const send = (status: number, body: unknown) => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    if (!b) return send(404, { error: 'no such skill' });
    if (b.kind === 'status') return send(b.status, { error: `configured ${b.status}` });
    if ((b.kind === 'slow' || b.kind === 'healthy') && b.delayMs)
      await new Promise((r) => setTimeout(r, b.delayMs));
    if (method === 'GET') return send(200, { ok: true });
    let input: unknown;
    try {
      input = await readJson(req);
    } catch {
      return send(400, { error: 'invalid JSON' });
    }
    inputs.set(name, input);
    if (b.kind === 'not_json') {
      res.writeHead(200, { 'content-type': 'text/plain' }).end('this is not json');
      return;
    }
    send(200, b.respond(input));
  });
  const { baseUrl } = server;
  return {
    baseUrl,
    url: (name) => `${baseUrl}/${name}`,
    set: (name, behaviour) => void behaviours.set(name, behaviour),
    hits: (name) => counts.get(name) ?? { GET: 0, POST: 0 },
    lastInput: (name) => inputs.get(name),
    close: () => server.close(),
  };
}

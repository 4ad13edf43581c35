import type { Application } from 'express';

/** A route an express app answers: method in lower case, path as an OpenAPI template (`{id}`). */
export interface MountedRoute {
  method: string;
  path: string;
}

// The parts of express 5's router stack read here (router 2.x `Layer`).
interface StackLayer {
  rawPath?: unknown;
  route?: { path: unknown; methods: Record<string, boolean> };
  handle?: { stack?: StackLayer[] };
}

const join = (prefix: string, path: string): string =>
  `${prefix.replace(/\/$/, '')}${path.startsWith('/') ? path : `/${path}`}`.replace(/\/$/, '') || '/';

function walk(stack: StackLayer[], prefix: string, out: MountedRoute[]): void {
  for (const layer of stack) {
    if (layer.route) {
      const paths = Array.isArray(layer.route.path) ? layer.route.path : [layer.route.path];
      for (const path of paths) {
        if (typeof path !== 'string') continue;
        const template = join(prefix, path).replace(/:([A-Za-z_][A-Za-z0-9_]*)/g, '{$1}');
        for (const [method, on] of Object.entries(layer.route.methods)) {
          if (on && method !== '_all') out.push({ method, path: template });
        }
      }
    } else if (layer.handle?.stack) {
      const mount = typeof layer.rawPath === 'string' && layer.rawPath !== '/' ? layer.rawPath : '';
      walk(layer.handle.stack, join(prefix, mount), out);
    }
  }
}

/**
 * Every route an express 5 app has mounted (`app.get`, routers at any mount path), for checking that
 * the OpenAPI document names exactly the routes the service answers.
 * @param app an express application (its `router` is created by the first route or middleware)
 */
export function mountedRoutes(app: Application): MountedRoute[] {
  const router = (app as unknown as { router?: { stack?: StackLayer[] } }).router;
  const out: MountedRoute[] = [];
  walk(router?.stack ?? [], '', out);
  return out;
}

/**
 * Compares the routes an app mounts with the operations its OpenAPI document lists.
 * @param doc the service's document (`paths` of OpenAPI 3.1)
 * @param ignore `"<method> <path>"` entries that are deliberately not in the document (`get /livez`)
 * @returns `undocumented`: mounted but not in the document; `unmounted`: documented but not mounted
 */
export function routeCoverage(
  app: Application,
  doc: { paths?: Record<string, Record<string, unknown>> },
  ignore: readonly string[] = [],
): { undocumented: string[]; unmounted: string[] } {
  const skip = new Set(ignore);
  const mounted = new Set(
    mountedRoutes(app)
      .map((r) => `${r.method} ${r.path}`)
      .filter((r) => !skip.has(r)),
  );
  const documented = new Set(
    Object.entries(doc.paths ?? {}).flatMap(([path, methods]) =>
      Object.keys(methods).map((method) => `${method} ${path}`),
    ),
  );
  return {
    undocumented: [...mounted].filter((r) => !documented.has(r)).sort(),
    unmounted: [...documented].filter((r) => !mounted.has(r)).sort(),
  };
}

/**
 * Routes every service mounts deliberately outside its API document: the Kubernetes probes, the
 * document, its reference page with its assets, `/` (which leads to it), and the agent entry points (the MCP endpoint speaks JSON-RPC and
 * lists its tools itself; `/llms.txt`). For `routeCoverage`'s `ignore`.
 */
export const INFRASTRUCTURE_ROUTES: readonly string[] = [
  'get /livez',
  'get /readyz',
  'get /openapi.json',
  'get /docs',
  'get /docs/assets/{file}',
  'get /',
  'post /mcp',
  'get /mcp',
  'delete /mcp',
  'get /llms.txt',
];

import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The `version` of the nearest `package.json` at or above `dir`: the one version number of a service,
 * reported by its OpenAPI document, its MCP server and its health answers alike.
 * @param dir where to start, usually the caller's `__dirname`
 * @throws Error when no package.json with a string `version` is found up to the file system's root
 */
export function packageVersion(dir: string): string {
  for (let at = path.resolve(dir); ; at = path.dirname(at)) {
    const file = path.join(at, 'package.json');
    if (existsSync(file)) {
      const version = (JSON.parse(readFileSync(file, 'utf8')) as { version?: unknown }).version;
      if (typeof version === 'string') return version;
    }
    if (path.dirname(at) === at) throw new Error(`no package.json with a version above ${dir}`);
  }
}

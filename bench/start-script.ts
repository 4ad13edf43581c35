// How a benchmarked service is started: exactly as its package's `start` script runs it (the same
// command its container runs, V8 memory flags included).
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The command and arguments of a service's `start` script, split on spaces (the scripts hold no quoted
 * arguments).
 * @param serviceDir the service's directory (holding its package.json)
 * @throws Error when the package has no `start` script
 */
export function startScript(serviceDir: string): { command: string; args: string[] } {
  const pkg = JSON.parse(readFileSync(path.join(serviceDir, 'package.json'), 'utf8')) as {
    scripts?: { start?: string };
  };
  const [command, ...args] = (pkg.scripts?.start ?? '').split(' ').filter(Boolean);
  if (!command) throw new Error(`${serviceDir}/package.json has no start script`);
  return { command, args };
}

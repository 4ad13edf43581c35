// Summarises a V8 CPU profile (`node --cpu-prof`, e.g. market-intel under
// `BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof" pnpm bench market-intel`): the share of
// self time by package (the node_modules package, a workspace package, or node's own) and the
// functions with the most self time. `pnpm exec tsx bench/cpu-profile.ts <file.cpuprofile> [top]`.
import { readFileSync } from 'node:fs';

/** The parts of a `.cpuprofile` (the DevTools protocol's `Profile`) read here. */
interface Profile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number } }[];
  samples: number[];
  timeDeltas: number[];
}

/** The package a script URL belongs to: `pkg` in node_modules, `@repo/x` in the workspace, `node:` or `(program)`. */
function packageOf(url: string, functionName: string): string {
  if (!url) return functionName.startsWith('(') ? functionName : '(native)';
  if (url.startsWith('node:')) return 'node';
  const modules = /.*node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (modules?.[1]) return modules[1];
  const workspace = /\/(packages|services)\/([^/]+)\//.exec(url);
  return workspace ? `@repo/${workspace[2]}` : url;
}

function main(): void {
  const [file, topArg] = process.argv.slice(2);
  if (!file) throw new Error('usage: tsx bench/cpu-profile.ts <file.cpuprofile> [top]');
  const top = Number(topArg ?? 25);
  const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
  const byId = new Map(profile.nodes.map((n) => [n.id, n.callFrame]));
  const selfUs = new Map<number, number>();
  profile.samples.forEach((id, i) => selfUs.set(id, (selfUs.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
  let total = 0;
  let idle = 0;
  const packages = new Map<string, number>();
  const functions = new Map<string, number>();
  for (const [id, us] of selfUs) {
    const frame = byId.get(id);
    if (!frame) continue;
    total += us;
    if (frame.functionName === '(idle)') {
      idle += us;
      continue;
    }
    const pkg = packageOf(frame.url, frame.functionName);
    packages.set(pkg, (packages.get(pkg) ?? 0) + us);
    const name = `${frame.functionName || '(anonymous)'} ${pkg}${frame.url ? `:${frame.lineNumber + 1}` : ''}`;
    functions.set(name, (functions.get(name) ?? 0) + us);
  }
  const busy = total - idle;
  const pct = (us: number) => `${((us / busy) * 100).toFixed(1)} %`;
  const rows = (m: Map<string, number>) =>
    [...m]
      .sort((a, b) => b[1] - a[1])
      .slice(0, top)
      .map(([name, us]) => `| ${name} | ${(us / 1000).toFixed(0)} ms | ${pct(us)} |`);
  process.stdout.write(
    [
      `${file}: ${(total / 1e6).toFixed(1)} s sampled, ${(busy / 1e6).toFixed(1)} s busy`,
      '',
      '| package | self time | share of busy |',
      '|---|---|---|',
      ...rows(packages),
      '',
      '| function | self time | share of busy |',
      '|---|---|---|',
      ...rows(functions),
      '',
    ].join('\n'),
  );
}

main();

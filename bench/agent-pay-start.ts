// Start time of the agent-pay command (target in packages/agent-client/README.md, "Start time": a
// free call and --help answer in under 300 ms). Runs the package's bin, as `pnpm agent-pay` and an
// installed package do, RUNS times each (default 20, after 2 warm-up runs): `--help`, and a GET of a
// free URL served here. With BENCH_COMPARE_SOURCE=1 it also times the sources run through tsx (what
// the bin did before it ran dist). Prints the machine, then the median and p90 wall time of each and
// its median CPU time (user + system: what the run cost, whatever the machine's load did to the wall
// time), beside bare node's as the floor.
//   pnpm bench agent-pay-start          (or: pnpm exec tsx bench/agent-pay-start.ts)
import { spawn, spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { quantile } from './measure';

const ROOT = path.resolve(__dirname, '..');
const PACKAGE = path.join(ROOT, 'packages', 'agent-client');
const RUNS = Number(process.env.BENCH_RUNS ?? 20);
const WARMUP = 2;
const TARGET_MS = 300;

/**
 * CPU time of this process's waited-for children (user + system), in milliseconds, from
 * /proc/self/stat (`cutime` + `cstime`, in clock ticks of 10 ms): what a run cost the machine,
 * whatever the neighbours' load did to its wall time. NaN where /proc is missing.
 */
function childrenCpuMs(): number {
  try {
    const stat = readFileSync('/proc/self/stat', 'utf8');
    // Fields after the command name (which may hold spaces), from field 3 on.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[13]) + Number(fields[14])) * 10;
  } catch {
    return NaN;
  }
}

/** Runs `args` with node once; the wall time and the CPU time in milliseconds, from spawn to exit. */
function timeOnce(
  args: string[],
): Promise<{ ms: number; cpuMs: number; code: number | null; stdout: string }> {
  return new Promise((resolve, reject) => {
    const cpuBefore = childrenCpuMs();
    const started = performance.now();
    const child = spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'pipe', 'inherit'] });
    let stdout = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString('utf8')));
    child.on('error', reject);
    // 'close': the child has been waited for, so its CPU time is counted.
    child.on('close', (code) =>
      resolve({ ms: performance.now() - started, cpuMs: childrenCpuMs() - cpuBefore, code, stdout }),
    );
  });
}

/**
 * Times `args` RUNS times after the warm-up; checks each run exits 0 with `expect` in its output.
 * @throws Error when a run fails
 */
async function measure(args: string[], expect: string): Promise<{ wall: number[]; cpu: number[] }> {
  const wall: number[] = [];
  const cpu: number[] = [];
  for (let i = 0; i < WARMUP + RUNS; i++) {
    const { ms, cpuMs, code, stdout } = await timeOnce(args);
    if (code !== 0 || !stdout.includes(expect))
      throw new Error(`node ${args.join(' ')} exited ${code} without "${expect}" in its output`);
    if (i >= WARMUP) {
      wall.push(ms);
      cpu.push(cpuMs);
    }
  }
  return { wall, cpu };
}

function line(name: string, { wall, cpu }: { wall: number[]; cpu: number[] }, target = true): string {
  const median = quantile(wall, 0.5);
  const p90 = quantile(wall, 0.9);
  const verdict = target ? `  (${median < TARGET_MS ? 'under' : 'OVER'} the ${TARGET_MS} ms target)` : '';
  return (
    `${name.padEnd(34)} wall median ${median.toFixed(0).padStart(5)} ms  p90 ${p90.toFixed(0).padStart(5)} ms` +
    `  cpu median ${quantile(cpu, 0.5).toFixed(0).padStart(4)} ms${verdict}`
  );
}

async function main(): Promise<void> {
  // The bin runs dist: build it (and what it needs) first; turbo's cache makes this quick when built.
  const build = spawnSync(
    'pnpm',
    ['exec', 'turbo', 'run', 'build', '--filter=@repo/agent-client', '--output-logs=errors-only'],
    { cwd: ROOT, stdio: 'inherit' },
  );
  if (build.status !== 0) throw new Error('the build of @repo/agent-client failed');

  const server = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ sectors: [], total_reports: 0, latest_overall: null }));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const freeUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/v1/sectors`;
  const bin = path.join(PACKAGE, 'bin', 'agent-pay.js');
  const cpus = os.cpus();

  console.log(
    `machine: ${cpus[0]?.model ?? 'unknown CPU'} x ${cpus.length}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, ` +
      `load ${os
        .loadavg()
        .map((l) => l.toFixed(2))
        .join(' ')}, node ${process.version}, ${os.platform()} ${os.release()}`,
  );
  console.log(`${RUNS} runs each after ${WARMUP} warm-up runs; wall time from spawn to exit`);
  try {
    console.log(line('node -e "" (the floor)', await measure(['-e', 'console.log(1)'], '1'), false));
    console.log(line('agent-pay --help (dist)', await measure([bin, '--help'], 'Usage: agent-pay')));
    console.log(line('agent-pay GET <free url> (dist)', await measure([bin, freeUrl], 'HTTP 200')));
    if (process.env.BENCH_COMPARE_SOURCE === '1') {
      const source = [
        '--require',
        require.resolve('tsx/cjs'),
        '--conditions=@repo/source',
        path.join(PACKAGE, 'src', 'cli.ts'),
      ];
      console.log(
        line('agent-pay --help (tsx source)', await measure([...source, '--help'], 'Usage: agent-pay')),
      );
      console.log(line('agent-pay GET <free url> (tsx)', await measure([...source, freeUrl], 'HTTP 200')));
    }
  } finally {
    server.close();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});

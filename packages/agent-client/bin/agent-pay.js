#!/usr/bin/env node
// Runs the compiled CLI when the package is built, else the TypeScript source through tsx (development).
// The workspace packages resolve to their sources only under the "@repo/source" export condition, which
// Node reads at start: the source runs in a child Node started with it.
const fs = require('node:fs');
const path = require('node:path');

const dist = path.join(__dirname, '..', 'dist', 'cli.js');
if (fs.existsSync(dist)) {
  require(dist);
} else {
  const { spawnSync } = require('node:child_process');
  const result = spawnSync(
    process.execPath,
    [
      '--require',
      require.resolve('tsx/cjs'),
      '--conditions=@repo/source',
      path.join(__dirname, '..', 'src', 'cli.ts'),
      ...process.argv.slice(2),
    ],
    { stdio: 'inherit' },
  );
  if (result.error) {
    process.stderr.write(`agent-pay: ${result.error.message}\n`);
    process.exitCode = 1;
  } else {
    process.exitCode = result.status ?? 1;
  }
}

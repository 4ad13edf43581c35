#!/usr/bin/env node
// Runs the compiled CLI (dist/, the package's `build`). In a checkout of the workspace where it has
// not been built yet, builds it once first (with the packages it needs) and says so on stderr; after
// changing the sources, run `pnpm build` again (or the package's `agent-pay` script, which runs them
// through tsx).
const fs = require('node:fs');
const path = require('node:path');

const dist = path.join(__dirname, '..', 'dist', 'cli.js');
if (!fs.existsSync(dist)) {
  const root = path.join(__dirname, '..', '..', '..');
  if (
    !fs.existsSync(path.join(root, 'pnpm-workspace.yaml')) ||
    !fs.existsSync(path.join(__dirname, '..', 'src'))
  ) {
    process.stderr.write(`agent-pay: ${dist} is missing: the package was published without its build\n`);
    process.exit(2);
  }
  process.stderr.write(
    'agent-pay: building it once (pnpm exec turbo run build --filter=@repo/agent-client)\n',
  );
  const { spawnSync } = require('node:child_process');
  const built = spawnSync(
    'pnpm',
    ['exec', 'turbo', 'run', 'build', '--filter=@repo/agent-client', '--output-logs=errors-only'],
    { cwd: root, stdio: ['ignore', 2, 2] },
  );
  if (built.status !== 0 || !fs.existsSync(dist)) {
    process.stderr.write(`agent-pay: the build failed${built.error ? `: ${built.error.message}` : ''}\n`);
    process.exit(2);
  }
}
require(dist);

#!/usr/bin/env node
// Runs `prisma generate` in the current package. The Prisma CLI insists that a schema-engine binary
// exists even though generate never runs it; where it cannot be downloaded, a placeholder file will do.
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const env = { ...process.env, PRISMA_HIDE_UPDATE_MESSAGE: '1' };
if (!env.PRISMA_SCHEMA_ENGINE_BINARY) {
  const placeholder = path.join(os.tmpdir(), 'prisma-schema-engine-placeholder');
  if (!fs.existsSync(placeholder)) fs.writeFileSync(placeholder, '');
  env.PRISMA_SCHEMA_ENGINE_BINARY = placeholder;
}
const result = spawnSync('prisma', ['generate'], {
  stdio: 'inherit',
  env,
  shell: process.platform === 'win32',
});
process.exit(result.status ?? 1);

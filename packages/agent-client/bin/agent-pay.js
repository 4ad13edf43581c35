#!/usr/bin/env node
// Runs the compiled CLI when the package is built, else the TypeScript source through tsx (development).
const fs = require('node:fs');
const path = require('node:path');

const dist = path.join(__dirname, '..', 'dist', 'cli.js');
if (fs.existsSync(dist)) {
  require(dist);
} else {
  require('tsx/cjs');
  require('../src/cli.ts');
}

#!/usr/bin/env node
// Runs the compiled CLI when the package is built, else the TypeScript source through tsx (development).
const fs = require('node:fs');
const path = require('node:path');

const dist = path.join(__dirname, '..', 'dist', 'cli.js');
let cli;
if (fs.existsSync(dist)) {
  cli = require(dist);
} else {
  require('tsx/cjs');
  cli = require('../src/cli.ts');
}

cli
  .runCli(process.argv.slice(2), {
    out: (text) => process.stdout.write(`${text}\n`),
    err: (text) => process.stderr.write(`${text}\n`),
  })
  .then((code) => {
    process.exitCode = code;
  });

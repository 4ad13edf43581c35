#!/usr/bin/env node
import { runAgentPay } from './run';

runAgentPay(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  cwd: process.cwd(),
  terminal: process.stderr,
}).then(
  (code) => {
    process.exitCode = code;
  },
  (error: unknown) => {
    process.stderr.write(`agent-pay: ${error instanceof Error ? error.message : String(error)}\n`);
    process.exitCode = 1;
  },
);

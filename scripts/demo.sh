#!/usr/bin/env bash
# Runs the agent demo against the stack started by `npm start` (or `pnpm start`).
source "$(dirname "$0")/lib.sh"
ensure_pnpm
[ -d node_modules ] || install_deps
exec pnpm exec tsx --conditions=@repo/source scripts/demo.ts "$@"

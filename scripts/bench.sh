#!/usr/bin/env bash
# Runs the benchmarks in bench/ (see docs/benchmarks.md); needs PostgreSQL, starts its own ledger and services.
source "$(dirname "$0")/lib.sh"
ensure_pnpm
ensure_postgres
install_deps
exec pnpm exec tsx --conditions=@repo/source bench/market-intel.ts "$@"

#!/usr/bin/env bash
# Installs what is missing, then starts the local Solana ledger and every service (Ctrl-C stops them).
source "$(dirname "$0")/lib.sh"
ensure_pnpm
ensure_postgres
ensure_rabbitmq
install_deps
exec pnpm exec tsx --conditions=@repo/source scripts/stack.ts "$@"

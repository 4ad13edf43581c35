#!/usr/bin/env bash
# The local Solana ledger CLI: `pnpm ledger start`, `pnpm ledger fund <address> [usdc]`, `pnpm ledger info`.
source "$(dirname "$0")/lib.sh"
ensure_pnpm
[ -d node_modules ] || install_deps
exec pnpm exec tsx --conditions=@repo/source packages/solana-localnet/src/cli.ts "$@"

#!/usr/bin/env bash
# Installs everything a clean clone needs and runs every check and test: typecheck, lint, then the
# test suites against the real PostgreSQL and the local Solana ledger (each suite creates its own
# *_test database).
source "$(dirname "$0")/lib.sh"
ensure_pnpm
ensure_postgres
ensure_rabbitmq
ensure_redis
ensure_chromium
install_deps
checks() {
  pnpm exec turbo run typecheck lint --output-logs=errors-only
  pnpm exec tsc -p scripts/tsconfig.json
  pnpm exec eslint scripts bench
  pnpm exec prettier --check . --log-level warn
  bash scripts/check-deploy.sh
}
step "typecheck and lint" checks
step "tests" pnpm exec turbo run test --concurrency=1 --output-logs=full

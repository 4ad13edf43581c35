#!/usr/bin/env bash
# Installs everything a clean clone needs and runs every check and test: typecheck, lint, then the
# test suites against the real PostgreSQL and the local Solana ledger (each suite creates its own
# *_test database).
source "$(dirname "$0")/lib.sh"
ensure_pnpm
ensure_postgres
ensure_rabbitmq
ensure_chromium
install_deps
checks() {
  pnpm exec turbo run typecheck lint --output-logs=errors-only
  pnpm exec tsc -p scripts/tsconfig.json
  pnpm exec eslint scripts bench
  pnpm exec tsx scripts/check-doc-references.ts
  pnpm exec tsx --test scripts/check-doc-references.test.ts
  pnpm exec tsx scripts/check-endpoint-map.ts
  pnpm exec tsx --test scripts/check-endpoint-map.test.ts
  pnpm exec prettier --check . --log-level warn
  if command -v kubectl >/dev/null 2>&1 || command -v kustomize >/dev/null 2>&1; then
    bash scripts/check-deploy.sh
    pnpm exec tsx --conditions=@repo/source --test scripts/check-deploy.test.ts
  else
    # CI and .ci/run have kubectl; a laptop without it still runs every other check and test.
    log "skipping the deployment checks: they render the overlays with kubectl or kustomize v5, and neither is installed (https://kubernetes.io/docs/tasks/tools/)"
  fi
}
step "typecheck and lint" checks
step "tests" pnpm exec turbo run test --concurrency=1 --output-logs=full

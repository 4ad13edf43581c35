# Shared steps of the root scripts: make sure pnpm, the dependencies and the local databases exist.
# Sourced, not run. Idempotent: each step does nothing when its work is already done.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

log() { printf '\033[1;34m==>\033[0m %s\n' "$*" >&2; }

ensure_pnpm() {
  if ! command -v pnpm >/dev/null 2>&1; then
    log "installing pnpm 10"
    npm install --global --no-audit --no-fund pnpm@10 >/dev/null 2>&1 || corepack enable pnpm
  fi
}

install_deps() {
  log "installing dependencies"
  pnpm install --frozen-lockfile --prefer-offline 2>&1 | tail -n 3
  log "generating Prisma clients"
  pnpm exec turbo run generate --output-logs=errors-only
}

# Waits until a TCP port accepts connections, up to $3 seconds.
wait_port() {
  local host=$1 port=$2 deadline=$((SECONDS + ${3:-30}))
  until (exec 3<>"/dev/tcp/$host/$port") 2>/dev/null; do
    ((SECONDS < deadline)) || { echo "timed out waiting for $host:$port" >&2; return 1; }
    sleep 0.2
  done
}

export TURBO_TELEMETRY_DISABLED=1

PGHOST_ADDR="${PGHOST_ADDR:-127.0.0.1}"
PGPORT_NUM="${PGPORT_NUM:-5432}"

ensure_postgres() {
  if ! (exec 3<>"/dev/tcp/$PGHOST_ADDR/$PGPORT_NUM") 2>/dev/null; then
    log "starting PostgreSQL"
    if command -v pg_ctlcluster >/dev/null 2>&1 && [ -d /etc/postgresql ]; then
      pg_ctlcluster --skip-systemctl-redirect "$(ls /etc/postgresql | head -n1)" main start
    else
      echo "PostgreSQL is not reachable on $PGHOST_ADDR:$PGPORT_NUM and no local cluster was found; start one (user postgres, trust auth) and retry." >&2
      return 1
    fi
    wait_port "$PGHOST_ADDR" "$PGPORT_NUM" 60
  fi
}

ensure_rabbitmq() {
  if ! (exec 3<>/dev/tcp/127.0.0.1/5672) 2>/dev/null; then
    log "starting RabbitMQ"
    rabbitmq-server -detached
    wait_port 127.0.0.1 5672 120
  fi
}

ensure_redis() {
  if ! (exec 3<>/dev/tcp/127.0.0.1/6379) 2>/dev/null; then
    log "starting Redis"
    redis-server --daemonize yes --bind 127.0.0.1 --port 6379 --save "" --appendonly no
    wait_port 127.0.0.1 6379 30
  fi
}

# Debian's Chromium for the dashboard's browser test (playwright-core drives /usr/bin/chromium).
ensure_chromium() {
  if [ ! -x /usr/bin/chromium ]; then
    log "installing Chromium"
    if [ "$(id -u)" = 0 ]; then
      (apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 ||
        { apt-get update >/dev/null 2>&1 && apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; })
    else
      (sudo apt-get install -y --no-install-recommends chromium >/dev/null 2>&1 ||
        { sudo apt-get update >/dev/null 2>&1 && sudo apt-get install -y --no-install-recommends chromium >/dev/null 2>&1; })
    fi || echo "could not install chromium; the browser test will fail" >&2
  fi
}

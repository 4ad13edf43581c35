# Shared steps of the root scripts: make sure pnpm, the dependencies and the local databases exist.
# Sourced, not run. Idempotent: each step does nothing when its work is already done.
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

log() { printf '\033[1;34m==>\033[0m %s\n' "$*" >&2; }

ensure_pnpm() {
  command -v pnpm >/dev/null 2>&1 || step "installing pnpm 10" install_pnpm
}

# npm's global folder, else corepack's shims, else npm's global folder as root (Node installed for the
# whole system, as Debian's or NodeSource's packages do, with a user that is not root).
install_pnpm() {
  npm install --global --no-audit --no-fund pnpm@10 >/dev/null 2>&1 ||
    corepack enable pnpm >/dev/null 2>&1 ||
    as_root npm install --global --no-audit --no-fund pnpm@10 >/dev/null
  command -v pnpm >/dev/null 2>&1 || { echo "pnpm was installed but is not on the PATH ($PATH)" >&2; return 1; }
}

install_deps() {
  step "installing dependencies" pnpm_install
  step "generating Prisma clients" pnpm exec turbo run generate --output-logs=errors-only
}

pnpm_install() { pnpm install --frozen-lockfile --prefer-offline 2>&1 | tail -n 3; }

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

COMPOSE_HINT="On a machine that is not Debian or Ubuntu, run the stack with Docker Compose instead: docker compose -f docker/compose.yaml up --build (README, \"Agent services\", its \"Without Debian or Ubuntu\" paragraph)."

# Runs a command as root: directly when root, else through sudo without a password prompt.
as_root() {
  if [ "$(id -u)" = 0 ]; then
    "$@"
  elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
    sudo -n "$@"
  else
    echo "cannot run '$*' as root (not root, and no password-less sudo). $COMPOSE_HINT" >&2
    return 1
  fi
}

# Times a step: `step "what" command...` prints what it does, then how long it took.
step() {
  local what=$1 started=$SECONDS
  shift
  log "$what"
  "$@"
  log "$what: done in $((SECONDS - started)) s"
}

port_open() { (exec 3<>"/dev/tcp/$1/$2") 2>/dev/null; }

APT_UPDATED=0
# Installs Debian/Ubuntu packages that are missing (apt-get update once, only when needed).
apt_install() {
  if ! command -v apt-get >/dev/null 2>&1; then
    echo "$* is missing and there is no apt-get to install it. $COMPOSE_HINT" >&2
    return 1
  fi
  if ! as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null 2>&1; then
    if [ "$APT_UPDATED" = 0 ]; then
      as_root apt-get update >/dev/null 2>&1 || true
      APT_UPDATED=1
    fi
    as_root env DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" >/dev/null
  fi
}

# Starts a system service through the init system when there is one, else with `fallback...`.
start_service() {
  local name=$1
  shift
  if command -v systemctl >/dev/null 2>&1 && [ -d /run/systemd/system ]; then
    as_root systemctl start "$name"
  elif command -v service >/dev/null 2>&1 && [ -x "/etc/init.d/$name" ]; then
    as_root service "$name" start >/dev/null
  else
    as_root "$@"
  fi
}

# Whether the stack's login works: user postgres, no password, over TCP. Unknown (status 2) without psql.
pg_login() {
  command -v psql >/dev/null 2>&1 || return 2
  # psql exits with 2 when it cannot connect: any failure is a refusal here.
  PGCONNECT_TIMEOUT=5 psql -h "$PGHOST_ADDR" -p "$PGPORT_NUM" -U postgres -w -Atc 'SELECT 1' postgres >/dev/null 2>&1 || return 1
}

# PostgreSQL on 127.0.0.1:5432 with the trust login for user postgres the stack and the tests use:
# installed when missing, started when down, and the login allowed (127.0.0.1 only) when it is refused.
ensure_postgres() {
  if port_open "$PGHOST_ADDR" "$PGPORT_NUM"; then
    local status=0
    pg_login || status=$?
    # A server we did not install (no psql here, or not Debian's cluster) is taken as it is.
    [ "$status" != 1 ] || [ -z "$(ls /etc/postgresql 2>/dev/null)" ] && return 0
  fi
  if ! command -v pg_ctlcluster >/dev/null 2>&1 || [ -z "$(ls /etc/postgresql 2>/dev/null)" ]; then
    step "installing PostgreSQL (Debian package postgresql)" apt_install postgresql
  fi
  local version
  version="$(ls /etc/postgresql | sort -V | tail -n1)"
  if ! port_open "$PGHOST_ADDR" "$PGPORT_NUM"; then
    step "starting PostgreSQL $version" start_service postgresql pg_ctlcluster --skip-systemctl-redirect "$version" main start
    wait_port "$PGHOST_ADDR" "$PGPORT_NUM" 60
  fi
  local login=0
  pg_login || login=$?
  [ "$login" = 1 ] || return 0
  local hba="/etc/postgresql/$version/main/pg_hba.conf"
  log "allowing the postgres user without a password on 127.0.0.1 only ($hba)"
  as_root sed -i '1i host all postgres 127.0.0.1/32 trust' "$hba"
  as_root pg_ctlcluster --skip-systemctl-redirect "$version" main reload >/dev/null
  # The reload is asynchronous: wait for the login, with a deadline.
  local deadline=$((SECONDS + 15))
  until pg_login; do
    ((SECONDS < deadline)) || { echo "PostgreSQL still refuses user postgres on 127.0.0.1 after editing $hba" >&2; return 1; }
    sleep 0.2
  done
}

ensure_rabbitmq() {
  if ! port_open 127.0.0.1 5672; then
    if ! command -v rabbitmq-server >/dev/null 2>&1 && [ ! -x /usr/sbin/rabbitmq-server ]; then
      step "installing RabbitMQ (Debian package rabbitmq-server)" apt_install rabbitmq-server
    fi
    port_open 127.0.0.1 5672 || step "starting RabbitMQ" start_service rabbitmq-server rabbitmq-server -detached
    wait_port 127.0.0.1 5672 120
  fi
  ensure_rabbitmqctl
  ensure_rabbitmq_management
}

# The test suites create and delete their virtual hosts through RabbitMQ's management API when it
# answers on 127.0.0.1:15672 (milliseconds, where each rabbitmqctl call boots an Erlang node for
# seconds), else with rabbitmqctl: the plugin is enabled when the broker is this machine's. Not fatal.
ensure_rabbitmq_management() {
  port_open 127.0.0.1 15672 && return 0
  local plugins
  plugins="$(command -v rabbitmq-plugins || echo /usr/sbin/rabbitmq-plugins)"
  [ -x "$plugins" ] || return 0
  log "enabling RabbitMQ's management plugin"
  if as_root "$plugins" -q enable rabbitmq_management >/dev/null && wait_port 127.0.0.1 15672 120; then
    return 0
  fi
  log "RabbitMQ's management API is not available: the tests create their vhosts with rabbitmqctl"
}

# The test suites run rabbitmqctl (queue depths, cut connections, and their vhosts when the management
# API is off), which Debian's package lets only root run: for another user, a wrapper in .data/bin runs
# it through sudo.
ensure_rabbitmqctl() {
  [ "$(id -u)" = 0 ] && return 0
  rabbitmqctl -q list_vhosts >/dev/null 2>&1 && return 0
  mkdir -p "$ROOT/.data/bin"
  printf '#!/bin/sh\nexec sudo -n %s "$@"\n' "$(command -v rabbitmqctl || echo /usr/sbin/rabbitmqctl)" >"$ROOT/.data/bin/rabbitmqctl"
  chmod +x "$ROOT/.data/bin/rabbitmqctl"
  export PATH="$ROOT/.data/bin:$PATH"
}

# The Chrome or Chromium the browser tests drive (playwright-core, never a downloaded browser):
# CHROMIUM_PATH when set, else Debian's /usr/bin/chromium, else a Chrome or Chromium already on the
# machine (exported as CHROMIUM_PATH: Ubuntu's own chromium package is a snap stub, and its CI runners
# come with Google Chrome), else Debian's package chromium.
ensure_chromium() {
  [ -n "${CHROMIUM_PATH:-}" ] && return 0
  local name found
  for name in /usr/bin/chromium chromium google-chrome-stable google-chrome chromium-browser; do
    found="$(command -v "$name" 2>/dev/null)" || continue
    # A snap stub without snapd is on the PATH but cannot run.
    "$found" --version >/dev/null 2>&1 || continue
    if [ "$found" != /usr/bin/chromium ]; then
      export CHROMIUM_PATH="$found"
      log "the browser tests drive $found"
    fi
    return 0
  done
  if ! step "installing Chromium (Debian package chromium)" apt_install chromium || ! /usr/bin/chromium --version >/dev/null 2>&1; then
    echo "could not install Chromium: the browser tests will fail. Install Chrome or Chromium and set CHROMIUM_PATH to it." >&2
  fi
}

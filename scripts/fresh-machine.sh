#!/usr/bin/env bash
# The README's two commands on a machine with nothing but Node 20, without a virtual machine: a minimal
# Debian (debootstrap --variant=minbase) with this machine's Node copied in, run in its own network, PID,
# mount, UTS and IPC namespaces, so that the PostgreSQL and RabbitMQ it installs take their usual
# ports beside this machine's own, and it reaches the package registries through NAT. In it, on a clean
# clone of HEAD: `npm start`, `pnpm demo` against that stack, then `npm test` twice; the second run must
# install nothing. The GitHub Actions job `fresh-machine` runs the same steps on a bare Ubuntu runner.
#
#   sudo bash scripts/fresh-machine.sh [--user] [--keep] [--dir DIR] [--suite SUITE] [--mirror URL]
#
#   --user    run the commands as a user with password-less sudo instead of root
#   --keep    keep DIR afterwards (default: removed); DIR defaults to /var/tmp/fresh-machine
#   --suite   Debian suite (default bookworm); --mirror its mirror (default http://deb.debian.org/debian)
#
# Needs root on Linux with debootstrap, iptables and util-linux (unshare, nsenter); about 40 minutes.
# Logs go to DIR/*.log. Uncommitted changes are not part of the check: it clones HEAD.
CALLER_DIR="$PWD"
# log and step (a timed step), and ROOT, the repository: the install scripts' own (it cds to ROOT).
source "$(dirname "$0")/lib.sh"
die() {
  echo "fresh-machine: $*" >&2
  exit 1
}

AS_USER=0 KEEP=0 DIR=/var/tmp/fresh-machine SUITE=bookworm MIRROR=http://deb.debian.org/debian
while [ $# -gt 0 ]; do
  case "$1" in
    --user) AS_USER=1 ;;
    --keep) KEEP=1 ;;
    --dir) DIR=$2 && shift ;;
    --suite) SUITE=$2 && shift ;;
    --mirror) MIRROR=$2 && shift ;;
    *) die "unknown option $1 (see the comment at the top of this script)" ;;
  esac
  shift
done
[ "$(id -u)" = 0 ] || die "needs root (namespaces, debootstrap, NAT)"
for tool in debootstrap iptables unshare nsenter ip git node; do
  command -v "$tool" >/dev/null 2>&1 || die "needs $tool"
done

DIR="$(cd "$CALLER_DIR" && realpath -m "$DIR")"
ROOTFS="$DIR/root"
# The root is deleted before and after a run: only one this script made (its marker beside it).
MARKER="$DIR/.fresh-machine"
[ -e "$ROOTFS" ] && [ ! -e "$MARKER" ] && die "$ROOTFS exists and was not made by this script"
mkdir -p "$DIR"
touch "$MARKER"
NETNS="fresh-machine-$$"
VETH="fm$$"
SUBNET=10.231.$(($$ % 250)).0
HOST_IP="${SUBNET%.0}.1"
GUEST_IP="${SUBNET%.0}.2"
OUT_DEV="$(ip route show default | awk '{print $5; exit}')"
[ -n "$OUT_DEV" ] || die "no default route to reach the package registries through"
FORWARD_WAS="$(cat /proc/sys/net/ipv4/ip_forward)"
INIT_PID="" START_PID=""
if [ "$AS_USER" = 1 ]; then GUEST_HOME=/home/dev; else GUEST_HOME=/root; fi

# The processes whose root directory is the fresh machine's (this machine sees its PID namespace).
guest_pids() {
  local p
  for p in /proc/[0-9]*; do
    [ "$(readlink "$p/root" 2>/dev/null)" = "$ROOTFS" ] && echo "${p#/proc/}"
  done
  return 0
}

cleanup() {
  local status=$?
  set +e
  # A second Ctrl-C must not cut the teardown short.
  trap '' INT TERM
  [ -n "$INIT_PID" ] && kill -KILL "$INIT_PID" 2>/dev/null
  ip netns del "$NETNS" 2>/dev/null
  ip link del "$VETH" 2>/dev/null
  iptables -t nat -D POSTROUTING -s "$SUBNET/24" -o "$OUT_DEV" -j MASQUERADE 2>/dev/null
  echo "$FORWARD_WAS" >/proc/sys/net/ipv4/ip_forward
  if [ "$KEEP" = 0 ] && [ -d "$ROOTFS" ]; then
    # The PID namespace's processes die with its init; their open files must be gone before rm.
    local deadline=$((SECONDS + 30))
    while [ -n "$(guest_pids)" ] && ((SECONDS < deadline)); do sleep 0.5; done
    # The mounts were made in the namespace's own mount table; never delete through one seen here.
    if grep -q " $ROOTFS/" /proc/self/mountinfo; then
      echo "fresh-machine: something is mounted under $ROOTFS here, so it is kept" >&2
    else
      rm -rf "$ROOTFS"
    fi
  fi
  if [ "$status" = 0 ]; then log "fresh machine: every step passed (logs in $DIR)"; else log "fresh machine: FAILED (logs in $DIR)"; fi
}
trap cleanup EXIT
# Ctrl-C or a kill during the run still removes the namespaces and the NAT rule.
trap 'exit 130' INT TERM

# Runs a command in the fresh machine, as root or as the user, in a login shell with a clean environment.
guest() {
  local who=()
  [ "$AS_USER" = 1 ] && who=(runuser -u dev --)
  nsenter -t "$INIT_PID" -a -r -w "${who[@]}" env -i HOME="$GUEST_HOME" PATH=/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin \
    TERM=dumb LANG=C.UTF-8 ${EXTRA_CA:+NODE_EXTRA_CA_CERTS=/etc/ssl/extra-ca.crt} bash -lc "cd ~/repo && $*"
}

build_root() {
  rm -rf "$ROOTFS"
  local include=()
  [ "$AS_USER" = 1 ] && include=(--include=sudo)
  debootstrap --variant=minbase "${include[@]}" "$SUITE" "$ROOTFS" "$MIRROR" >"$DIR/debootstrap.log" 2>&1 ||
    die "debootstrap failed (see $DIR/debootstrap.log)"
  # Node 20 as its official tarball lays it out: the binary, npm and corepack under /usr/local.
  local node prefix
  node="$(readlink -f "$(command -v node)")"
  prefix="$(dirname "$(dirname "$node")")"
  [ -d "$prefix/lib/node_modules/npm" ] || die "npm is not beside $node ($prefix/lib/node_modules/npm)"
  mkdir -p "$ROOTFS/usr/local/bin" "$ROOTFS/usr/local/lib/node_modules"
  cp "$node" "$ROOTFS/usr/local/bin/node"
  cp -a "$prefix/lib/node_modules/npm" "$ROOTFS/usr/local/lib/node_modules/"
  ln -s ../lib/node_modules/npm/bin/npm-cli.js "$ROOTFS/usr/local/bin/npm"
  ln -s ../lib/node_modules/npm/bin/npx-cli.js "$ROOTFS/usr/local/bin/npx"
  if [ -d "$prefix/lib/node_modules/corepack" ]; then
    cp -a "$prefix/lib/node_modules/corepack" "$ROOTFS/usr/local/lib/node_modules/"
    ln -s ../lib/node_modules/corepack/dist/corepack.js "$ROOTFS/usr/local/bin/corepack"
  fi
  # A TLS-inspecting proxy between this machine and the registries is trusted there too.
  EXTRA_CA="${NODE_EXTRA_CA_CERTS:-}"
  if [ -n "$EXTRA_CA" ]; then
    mkdir -p "$ROOTFS/etc/ssl"
    cp "$EXTRA_CA" "$ROOTFS/etc/ssl/extra-ca.crt"
    # sudo would drop it from npm's environment otherwise.
    [ "$AS_USER" = 1 ] && echo 'Defaults env_keep += "NODE_EXTRA_CA_CERTS"' >"$ROOTFS/etc/sudoers.d/extra-ca"
  fi
  # systemd-resolved's stub listens on this machine's loopback only: take its upstream servers.
  if grep -q '^nameserver 127\.' /etc/resolv.conf && [ -f /run/systemd/resolve/resolv.conf ]; then
    cp /run/systemd/resolve/resolv.conf "$ROOTFS/etc/resolv.conf"
  else
    cp /etc/resolv.conf "$ROOTFS/etc/resolv.conf"
  fi
  printf '127.0.0.1 localhost fresh-machine\n::1 localhost\n' >"$ROOTFS/etc/hosts"
  echo fresh-machine >"$ROOTFS/etc/hostname"
  if [ "$AS_USER" = 1 ]; then
    chroot "$ROOTFS" useradd --create-home --shell /bin/bash dev
    echo 'dev ALL=(ALL) NOPASSWD:ALL' >"$ROOTFS/etc/sudoers.d/dev"
    chmod 0440 "$ROOTFS/etc/sudoers.d/dev"
  fi
  git clone --quiet "$ROOT" "$ROOTFS$GUEST_HOME/repo"
  [ "$AS_USER" = 1 ] && chroot "$ROOTFS" chown -R dev:dev /home/dev/repo
  return 0
}

start_namespaces() {
  ip netns add "$NETNS"
  ip link add "$VETH" type veth peer name "${VETH}g"
  ip link set "${VETH}g" netns "$NETNS"
  ip addr add "$HOST_IP/24" dev "$VETH"
  ip link set "$VETH" up
  ip netns exec "$NETNS" sh -c "ip link set lo up && ip addr add $GUEST_IP/24 dev ${VETH}g && ip link set ${VETH}g up && ip route add default via $HOST_IP"
  echo 1 >/proc/sys/net/ipv4/ip_forward
  iptables -t nat -A POSTROUTING -s "$SUBNET/24" -o "$OUT_DEV" -j MASQUERADE
  # PID 1 of the new PID namespace is a sleep inside the new root; every command joins its namespaces.
  ip netns exec "$NETNS" unshare --pid --fork --mount --uts --ipc --propagation private bash -c "
    hostname fresh-machine
    mount --rbind /dev '$ROOTFS/dev'
    mount -t tmpfs tmpfs '$ROOTFS/dev/shm'
    mount -t proc proc '$ROOTFS/proc'
    mount -t sysfs sysfs '$ROOTFS/sys' 2>/dev/null || true
    mount -t tmpfs tmpfs '$ROOTFS/run'
    mount -t tmpfs -o mode=1777 tmpfs '$ROOTFS/tmp'
    exec chroot '$ROOTFS' sleep infinity" >"$DIR/namespaces.log" 2>&1 &
  local deadline=$((SECONDS + 20))
  until [ -n "$INIT_PID" ]; do
    ((SECONDS < deadline)) || die "the namespaces did not start (see $DIR/namespaces.log)"
    sleep 0.2
    INIT_PID="$(guest_pids | head -n1)"
  done
}

# Waits until the three services answer /readyz on the fresh machine's loopback, or the stack exits.
wait_ready() {
  local deadline=$((SECONDS + 1200)) port
  while ((SECONDS < deadline)); do
    kill -0 "$START_PID" 2>/dev/null || {
      tail -n 60 "$DIR/start.log" >&2
      die "npm start exited before the stack was ready"
    }
    sleep 2
    for port in 3001 3002 3003; do
      ip netns exec "$NETNS" node -e "fetch('http://127.0.0.1:$port/readyz').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))" || continue 2
    done
    return 0
  done
  tail -n 60 "$DIR/start.log" >&2
  die "the stack was not ready within 20 minutes"
}

# The processes of `npm start`'s stack (scripts/stack.ts and the pnpm and tsx processes running it).
stack_pids() {
  local p
  for p in $(guest_pids); do
    grep -q 'scripts/stack.ts' "/proc/$p/cmdline" 2>/dev/null && echo "$p"
  done
  return 0
}

stop_stack() {
  local deadline=$((SECONDS + 60))
  # shellcheck disable=SC2046 # one PID per word
  kill -INT $(stack_pids) 2>/dev/null || true
  while [ -n "$(stack_pids)" ]; do
    ((SECONDS < deadline)) || die "the stack did not stop within 60 s of Ctrl-C"
    sleep 0.5
  done
}

start_run() {
  guest 'npm start' >"$DIR/start.log" 2>&1 &
  START_PID=$!
  wait_ready
}

demo_run() { guest 'pnpm demo' >"$DIR/demo.log" 2>&1 || die "pnpm demo failed (see $DIR/demo.log)"; }

first_test_run() { guest 'npm test' >"$DIR/test-1.log" 2>&1 || die "npm test failed (see $DIR/test-1.log)"; }

second_test_run() {
  guest 'npm test' >"$DIR/test-2.log" 2>&1 || die "the second npm test failed (see $DIR/test-2.log)"
  if grep -Eq 'installing (pnpm|PostgreSQL|RabbitMQ|Chromium)' "$DIR/test-2.log"; then
    grep -E 'installing (pnpm|PostgreSQL|RabbitMQ|Chromium)' "$DIR/test-2.log" >&2
    die "the second npm test installed something again"
  fi
}

step "a minimal Debian $SUITE with Node $(node -v) in $ROOTFS" build_root
start_namespaces
step "npm start (log: $DIR/start.log)" start_run
step "pnpm demo (log: $DIR/demo.log)" demo_run
step "stopping the stack with Ctrl-C" stop_stack
step "npm test (log: $DIR/test-1.log)" first_test_run
step "npm test again, installing nothing (log: $DIR/test-2.log)" second_test_run

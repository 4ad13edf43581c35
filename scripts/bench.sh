#!/usr/bin/env bash
# Runs a benchmark in bench/ (see docs/benchmarks.md): `pnpm bench [market-intel|compute|signal-feedback|skill-router]`
# (default market-intel). Needs PostgreSQL and RabbitMQ (started when down); starts its own ledger and services.
source "$(dirname "$0")/lib.sh"
name="${1:-market-intel}"
[ "$#" -gt 0 ] && shift
if [ ! -f "bench/$name.ts" ]; then
  echo "unknown benchmark \"$name\"; one of: $(cd bench && ls *.ts | grep -v -e bare-server -e x402-express-server -e '^prng' | sed 's/\.ts$//' | tr '\n' ' ')" >&2
  exit 2
fi
ensure_pnpm
ensure_postgres
ensure_rabbitmq
install_deps
exec pnpm exec tsx --conditions=@repo/source "bench/$name.ts" "$@"

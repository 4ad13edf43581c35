#!/bin/sh
# Entry point of the migrate image: `prisma migrate deploy` for one service's database ($1 with
# DATABASE_URL), or for all three with their *_DATABASE_URL variables. Exits non-zero on the first failure.
set -eu

deploy() {
  service=$1 url=$2
  echo "migrate: applying services/$service/prisma/migrations"
  cd "/app/services/$service"
  DATABASE_URL=$url ./node_modules/.bin/prisma migrate deploy
}

if [ $# -gt 0 ]; then
  case $1 in
    market-intel | signal-feedback | skill-router) ;;
    *) echo "migrate: unknown service '$1' (market-intel, signal-feedback or skill-router)" >&2; exit 2 ;;
  esac
  : "${DATABASE_URL:?DATABASE_URL must be set}"
  deploy "$1" "$DATABASE_URL"
else
  deploy market-intel "${MARKET_INTEL_DATABASE_URL:?MARKET_INTEL_DATABASE_URL must be set}"
  deploy signal-feedback "${SIGNAL_FEEDBACK_DATABASE_URL:?SIGNAL_FEEDBACK_DATABASE_URL must be set}"
  deploy skill-router "${SKILL_ROUTER_DATABASE_URL:?SKILL_ROUTER_DATABASE_URL must be set}"
fi

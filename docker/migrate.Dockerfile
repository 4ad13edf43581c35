# syntax=docker/dockerfile:1
# Applies each service's Prisma migrations with `prisma migrate deploy` (docs/deploying.md, "Deploying",
# "Migrations"), then exits: the compose `migrate` service and the Kubernetes `migrate` Job.
#   docker run --rm -e DATABASE_URL=postgresql://... migrate skill-router
# The argument names the service whose migrations are applied (market-intel, signal-feedback,
# skill-router); without one, all three are applied to MARKET_INTEL_DATABASE_URL,
# SIGNAL_FEEDBACK_DATABASE_URL and SKILL_ROUTER_DATABASE_URL.
# Build from the repository root: docker build -f docker/migrate.Dockerfile -t migrate .
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS base
ENV PNPM_HOME=/pnpm PATH=/pnpm:$PATH CI=true
# The schema engine that `prisma migrate deploy` runs links against OpenSSL 3.
RUN apt-get update && apt-get install -y --no-install-recommends openssl ca-certificates \
    && rm -rf /var/lib/apt/lists/*
WORKDIR /repo
COPY package.json ./
RUN npm install --global --no-audit --no-fund "$(node -p "require('./package.json').packageManager")"

FROM base AS fetch
COPY pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
# The patched dependencies: pnpm fetch reads the patch files the lockfile names.
COPY patches ./patches
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store pnpm fetch

# The Prisma CLI (a development dependency of each service) with its schema engine, downloaded by the
# engines' install script, and each service's prisma/ folder and prisma.config.ts.
FROM fetch AS install
COPY . .
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store \
    pnpm install --frozen-lockfile --offline \
      --filter @repo/market-intel --filter @repo/signal-feedback --filter @repo/skill-router \
    && mkdir -p /out/services && cp -a node_modules package.json /out/ \
    && for svc in market-intel signal-feedback skill-router; do \
         mkdir -p "/out/services/$svc" && \
         cp -a "services/$svc/package.json" "services/$svc/prisma.config.ts" "services/$svc/prisma" \
               "services/$svc/node_modules" "/out/services/$svc/"; \
       done \
    && cp -a packages /out/packages && cp docker/migrate.sh /out/migrate.sh

FROM base AS runtime
# The config loader (jiti) would otherwise try to cache compiled prisma.config.ts files on the
# read-only root filesystem.
ENV NODE_ENV=production HOME=/tmp CHECKPOINT_DISABLE=1 PRISMA_HIDE_UPDATE_MESSAGE=1 JITI_FS_CACHE=false
WORKDIR /app
COPY --from=install --chown=1000:1000 /out /app
USER 1000:1000
ENTRYPOINT ["sh", "/app/migrate.sh"]

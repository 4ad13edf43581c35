# syntax=docker/dockerfile:1
# signal-feedback: signal ingestion, analysis and the dashboard (port 3002). Runs compiled JavaScript (dist).
# Build from the repository root: docker build -f docker/signal-feedback.Dockerfile -t signal-feedback .
ARG NODE_IMAGE=node:24-bookworm-slim

FROM ${NODE_IMAGE} AS base
ENV PNPM_HOME=/pnpm PATH=/pnpm:$PATH CI=true TURBO_TELEMETRY_DISABLED=1
WORKDIR /repo
COPY package.json ./
# The pnpm version the repository pins in packageManager.
RUN npm install --global --no-audit --no-fund "$(node -p "require('./package.json').packageManager")"

# Downloads every package of the lockfile once; later stages install offline from this store.
FROM base AS fetch
COPY pnpm-lock.yaml pnpm-workspace.yaml .npmrc ./
# The patched dependencies: pnpm fetch reads the patch files the lockfile names.
COPY patches ./patches
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store pnpm fetch

FROM fetch AS build
COPY . .
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store pnpm install --frozen-lockfile --offline
# turbo runs the Prisma generator, then compiles this package and the workspace packages it depends on.
RUN pnpm exec turbo run build --filter=@repo/signal-feedback --output-logs=errors-only
# Production dependencies only, then the compiled packages without their sources; prisma/ goes too:
# readiness waits until the database has every migration the image ships (docs/deploying.md, "Migrations").
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store \
    find . -name node_modules -type d -prune -exec rm -rf {} + && \
    pnpm install --prod --frozen-lockfile --offline --filter-prod "@repo/signal-feedback..." && \
    mkdir -p /out && cp -a node_modules package.json /out/ && \
    for dir in packages/* services/signal-feedback; do \
      mkdir -p "/out/$dir" && cp -a "$dir/package.json" "/out/$dir/" && \
      for part in dist bin assets node_modules public prisma; do if [ -e "$dir/$part" ]; then cp -a "$dir/$part" "/out/$dir/"; fi; done; \
    done

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production PORT=3002
WORKDIR /app/services/signal-feedback
COPY --from=build --chown=1000:1000 /out /app
USER 1000:1000
EXPOSE 3002
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||3002)+'/livez').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/main.js"]

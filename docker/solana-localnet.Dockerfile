# syntax=docker/dockerfile:1
# The local Solana ledger (LiteSVM JSON-RPC, port 8899): development and compose only, never production.
# Build from the repository root: docker build -f docker/solana-localnet.Dockerfile -t solana-localnet .
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
# turbo compiles this package and the workspace packages it depends on.
RUN pnpm exec turbo run build --filter=@repo/solana-localnet --output-logs=errors-only
# Production dependencies only, then the compiled packages without their sources.
RUN --mount=type=cache,id=pnpm-store,target=/pnpm/store \
    find . -name node_modules -type d -prune -exec rm -rf {} + && \
    pnpm install --prod --frozen-lockfile --offline --filter-prod "@repo/solana-localnet..." && \
    mkdir -p /out && cp -a node_modules package.json /out/ && \
    for dir in packages/* packages/solana-localnet; do \
      mkdir -p "/out/$dir" && cp -a "$dir/package.json" "/out/$dir/" && \
      for part in dist node_modules; do if [ -e "$dir/$part" ]; then cp -a "$dir/$part" "/out/$dir/"; fi; done; \
    done

FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production PORT=8899
WORKDIR /app/packages/solana-localnet
COPY --from=build --chown=1000:1000 /out /app
RUN mkdir -p /data && chown 1000:1000 /data
VOLUME /data
USER 1000:1000
EXPOSE 8899
HEALTHCHECK --interval=10s --timeout=3s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.PORT||8899)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/cli.js", "start", "--host", "0.0.0.0", "--port", "8899", "--data-dir", "/data"]

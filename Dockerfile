# The service as a container image: `docker build -t service-backend .` (or `docker compose up`
# with compose.yaml). Two stages: one that compiles, one that only runs what was compiled.
# NODE_IMAGE can name another Node 22 (or newer; 20.19 and later still run it) image on Debian,
# e.g. a mirror's copy. The default is the long-term support line: Node 20 reached its end of life
# in April 2026.
ARG NODE_IMAGE=node:22-bookworm-slim

FROM ${NODE_IMAGE} AS build
WORKDIR /app
# better-sqlite3 and argon2 load native code: npm fetches a prebuilt binary when one fits the
# platform and compiles from source otherwise, which needs these.
RUN apt-get update \
  && apt-get install -y --no-install-recommends python3 make g++ \
  && rm -rf /var/lib/apt/lists/*
COPY package.json package-lock.json ./
RUN npm ci
COPY . .
RUN npm run build \
  && npm prune --omit=dev

FROM ${NODE_IMAGE}
WORKDIR /app
# HOST=0.0.0.0: reachable through the container's published port. NODE_ENV=production requires
# ENCRYPTION_SECRET, so the container refuses to start without one. UV_THREADPOOL_SIZE is what
# `npm start` sets (it bounds the memory Argon2 keeps; see src/auth/passwords.ts). npm's
# pre-scripts build, and this image holds no compiler: they are skipped, so `npm run admin:create`
# runs the compiled command.
ENV NODE_ENV=production \
  HOST=0.0.0.0 \
  PORT=3000 \
  DATA_DIR=/data \
  UV_THREADPOOL_SIZE=2 \
  NPM_CONFIG_IGNORE_SCRIPTS=true \
  NPM_CONFIG_UPDATE_NOTIFIER=false
# The code belongs to root and is read-only for the service's user; only DATA_DIR is writable.
COPY --from=build /app/package.json /app/package-lock.json ./
COPY --from=build /app/node_modules node_modules
COPY --from=build /app/migrations migrations
COPY --from=build /app/plugins plugins
COPY --from=build /app/dist/src dist/src
COPY --from=build /app/dist/plugins dist/plugins
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME /data
EXPOSE 3000
# Liveness only (/api/health touches no database); Node's own fetch, as slim images have no curl.
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/api/health').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
# Node itself is PID 1 and handles SIGTERM: in-flight requests finish, the database closes. The
# heap flags are npm start's (a smaller young generation, a slower-growing old one: see the README).
CMD ["node", "--enable-source-maps", "--max-semi-space-size=4", "--heap-growing-percent=50", "dist/src/server.js"]

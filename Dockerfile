# One image for the API, the delivery workers and the migration CLI; docker-compose.yml picks the command.
# Node 24 runs the .ts sources directly (type stripping), so there is no build step; see the compile cache below.
FROM node:24-bookworm-slim

ENV NODE_ENV=production
WORKDIR /app

# Production dependencies only. The dev set (the `node` package, embedded-postgres, s3rver, vitest, ...)
# is for local runs and tests; the image runs on its own Node 24. No install scripts: the only production
# package with one is msgpackr-extract, which package.json's allowScripts also leaves off (its prebuilt
# binary still installs as an optional dependency).
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
  && npm cache clean --force

COPY tsconfig.json ./
COPY src ./src

# The version the processes report (docs/upgrading.md#which-version-runs). The build has no git, so
# it is passed in: --build-arg VERSION="$(npm run -s build-info)" --build-arg COMMIT="$(npm run -s build-info -- commit)".
# Without them the image reports package.json's version with "+unknown".
ARG VERSION=""
ARG COMMIT=""
LABEL org.opencontainers.image.version="${VERSION}" org.opencontainers.image.revision="${COMMIT}"
RUN if [ -n "$VERSION" ]; then node src/cli/build-info.ts write "$VERSION" "$COMMIT"; fi

# Node's compile cache (src/shared/infra/compile-cache.mjs) keeps its entries per user id, so the user that runs
# the processes fills it: each entry point loads every module it imports and stops at its configuration
# check (exit 78, EX_CONFIG, as there is none at build time). No container then loads the TypeScript
# stripper, which would stay in each process's memory for its whole life
# (docs/benchmarks.md#the-compile-cache).
RUN mkdir -p node_modules/.cache/node-compile-cache && chown node:node node_modules/.cache/node-compile-cache
USER node
RUN for entry in src/api/main.ts src/workers/main.ts src/bounces/main.ts; do \
      env -i PATH="$PATH" node --import=./src/shared/infra/compile-cache.mjs "$entry" >/dev/null 2>&1; \
      test $? -eq 78 || exit 1; \
    done

EXPOSE 3000

# Liveness of the API (the worker and migrate services in docker-compose.yml turn this off).
# The slim image has no curl: use Node's fetch.
HEALTHCHECK --interval=15s --timeout=5s --start-period=20s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:' + (process.env.PORT || 3000) + '/healthz').then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]

# Call node directly, not npm: signals (SIGTERM on `docker stop`) reach the process, which shuts down cleanly.
CMD ["node", "--import=./src/shared/infra/compile-cache.mjs", "src/api/main.ts"]

# Loopwright worker image, used by the `worker` service in docker-compose.yml.
#
#   docker build -t loopwright .                 # build it on its own
#   docker compose up --build                    # or let compose build it
#
# Two stages:
#   build   - installs every dependency (dev included), compiles TypeScript to dist/
#             and writes the prebuilt workflow bundle (`npm run build`).
#   runtime - production dependencies only, plus dist/ from the build stage; runs
#             as the unprivileged `node` user.

ARG NODE_IMAGE=node:20-bookworm-slim

# ---------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS build
WORKDIR /app

# Dependencies first, so this layer is cached until package*.json change.
# --ignore-scripts: the package's own `prepare` script runs `npm run build`, which
# cannot work before the sources are copied in; it is run explicitly below instead.
# (No dependency needs its install script here: @temporalio/core-bridge ships
# prebuilt native binaries and @swc/core gets its binary from an optional package.)
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund

# Sources (see .dockerignore for what is left out), then compile:
# `npm run build` = `tsc -p tsconfig.build.json` + the prebuilt workflow bundle in dist/.
COPY . .
RUN npm run build

# ---------------------------------------------------------------------------
FROM ${NODE_IMAGE} AS runtime
ENV NODE_ENV=production
WORKDIR /app

# Production dependencies only. --ignore-scripts again skips `prepare` (there is no
# TypeScript compiler in this stage, and nothing needs rebuilding).
COPY package.json package-lock.json ./
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund \
    && npm cache clean --force \
    && chown node:node /app

COPY --from=build /app/dist ./dist

# git: agent tools (git_diff, git_status) and L2 runs (a worktree and branch per run).
# bubblewrap: the sandbox (bwrap) for every process that runs code the agent wrote or chose;
# without it, loops that run commands are refused unless LOOPWRIGHT_SANDBOX=off. In a container
# it needs the worker's security_opt in docker-compose.yml (seccomp profile, AppArmor, /proc).
# /data: the shared volume for transcripts and worktrees, owned by the worker's user.
RUN apt-get update \
    && apt-get install -y --no-install-recommends git ca-certificates bubblewrap \
    && rm -rf /var/lib/apt/lists/* \
    && mkdir -p /data && chown node:node /data

# The official node image ships an unprivileged `node` user (uid 1000).
USER node

# Override with `command:` in compose or `docker run loopwright node dist/client/cli.js ...`.
CMD ["node", "dist/workers/main.js"]

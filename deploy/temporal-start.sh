#!/bin/sh
# Starts the Temporal server for docker-compose.yml's `temporal` service (image temporalio/server,
# Alpine): every service in one process, from the config template `npm run cluster` uses
# (deploy/temporal/config/loopwright.yaml, this folder mounted at /etc/temporal/loopwright). The
# cluster starts the same binary with the same --root layout, --config and --env, one
# `--service` per process (server/cluster/cluster.ts); test/docker-compose.test.ts runs this
# script against a stand-in temporal-server and checks both command lines agree.
#
# Environment (besides what the template reads, see loopwright.yaml):
#   TEMPORAL_CONFIG_ROOT         the mounted deploy/temporal folder, default /etc/temporal/loopwright
#   TEMPORAL_BROADCAST_ADDRESS   the address other services reach this one at, default the
#                                container's first IP (hostname -i)
#   USE_INTERNAL_FRONTEND        set (with an authorizer): also start the internal-frontend service
set -eu

: "${TEMPORAL_CONFIG_ROOT:=/etc/temporal/loopwright}"
if [ -z "${TEMPORAL_BROADCAST_ADDRESS:-}" ]; then
  # hostname -i lists every address of the container; the first is on the compose network.
  set -- $(hostname -i)
  TEMPORAL_BROADCAST_ADDRESS=$1
fi
export TEMPORAL_BROADCAST_ADDRESS

set -- --service frontend --service history --service matching --service worker
if [ -n "${USE_INTERNAL_FRONTEND:-}" ]; then
  set -- "$@" --service internal-frontend
fi
exec temporal-server --root "$TEMPORAL_CONFIG_ROOT" --config config --env loopwright --allow-no-auth start "$@"

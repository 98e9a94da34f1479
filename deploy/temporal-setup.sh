#!/bin/sh
# One-shot Temporal setup for Loopwright, run by the `temporal-setup` service of
# docker-compose.yml (image temporalio/admin-tools, which has the `temporal` CLI) and by
# `npm run cluster` (with the Temporal CLI Loopwright installs).
#
#   1. waits until the Temporal server answers SERVING;
#   2. creates the namespace when it does not exist;
#   3. registers Loopwright's search attributes;
#   4. sets the namespace's retention (default 720h = 30 days);
#   5. checks that every search attribute is listed with the right type;
#   6. waits until each frontend uses them (a visibility query naming every one succeeds):
#      a frontend reads a namespace's search attributes from its namespace cache, refreshed
#      every few seconds, and until then refuses a start that sets them ("Namespace default
#      has no mapping defined for search attribute ...", temporalio/temporal#4017).
#
# Idempotent: everything that already exists is kept, so `docker compose up` can run
# it again and again. A search attribute that exists with a *different* type is an
# error (the server cannot change a type; remove it first).
#
# Environment (all optional):
#   TEMPORAL_ADDRESS              default temporal:7233
#   TEMPORAL_NAMESPACE            default default
#   LOOPWRIGHT_RETENTION          default 720h
#   TEMPORAL_SETUP_TIMEOUT        seconds to wait for the server/namespace, default 300
#   TEMPORAL_SETUP_RETRY_DELAY    seconds between attempts, default 2
#   TEMPORAL_SETUP_ATTEMPTS       attempts per CLI call that may fail transiently, default 10
#   TEMPORAL_SETUP_FRONTENDS      frontend addresses to wait for in step 6, default TEMPORAL_ADDRESS
set -eu

: "${TEMPORAL_ADDRESS:=temporal:7233}"
: "${TEMPORAL_NAMESPACE:=default}"
: "${LOOPWRIGHT_RETENTION:=720h}"
: "${TEMPORAL_SETUP_TIMEOUT:=300}"
: "${TEMPORAL_SETUP_RETRY_DELAY:=2}"
: "${TEMPORAL_SETUP_ATTEMPTS:=10}"
: "${TEMPORAL_SETUP_FRONTENDS:=$TEMPORAL_ADDRESS}"
export TEMPORAL_ADDRESS
NS=$TEMPORAL_NAMESPACE

# name:type of every search attribute. Keep in sync with SEARCH_ATTRIBUTES in
# common/search-attributes.ts (test/docker-compose.test.ts fails when they differ).
SEARCH_ATTRIBUTES="LoopName:Keyword LoopState:Keyword LoopAttempt:Int LoopAutonomy:Keyword LoopItemKey:Keyword LoopCostUsd:Double LoopTokens:Int LoopAudit:Keyword"

log() { printf '[temporal-setup] %s\n' "$*"; }
die() { printf '[temporal-setup] ERROR: %s\n' "$*" >&2; exit 1; }

DEADLINE=$(( $(date +%s) + TEMPORAL_SETUP_TIMEOUT ))

# wait_until DESCRIPTION COMMAND... : retry COMMAND until it succeeds or the deadline passes.
wait_until() {
  what=$1; shift
  until "$@" >/dev/null 2>&1; do
    [ "$(date +%s)" -lt "$DEADLINE" ] || die "timed out after ${TEMPORAL_SETUP_TIMEOUT}s waiting for $what"
    log "waiting for $what ..."
    sleep "$TEMPORAL_SETUP_RETRY_DELAY"
  done
}

# idempotent COMMAND... : run COMMAND, retrying transient failures; an "already exists"
# answer counts as success (re-runs), "already exists and has different type" does not.
idempotent() {
  attempt=1
  while :; do
    if out=$("$@" 2>&1); then
      [ -z "$out" ] || printf '%s\n' "$out"
      return 0
    fi
    case $out in
      *"different type"*)
        printf '%s\n' "$out" >&2
        return 1 ;;
      *"already exists"* | *"already registered"* | *AlreadyExists*)
        log "already exists, kept: $*"
        return 0 ;;
    esac
    if [ "$attempt" -ge "$TEMPORAL_SETUP_ATTEMPTS" ]; then
      printf '%s\n' "$out" >&2
      return 1
    fi
    log "attempt $attempt failed, retrying: $*"
    attempt=$((attempt + 1))
    sleep "$TEMPORAL_SETUP_RETRY_DELAY"
  done
}

server_serving() {
  temporal operator cluster health --address "$TEMPORAL_ADDRESS" | grep -q SERVING
}

namespace_exists() {
  temporal operator namespace describe --namespace "$NS"
}

# registered LISTING NAME TYPE : does the `search-attribute list` table have NAME with TYPE?
# (The type is printed as e.g. Keyword, or INDEXED_VALUE_TYPE_KEYWORD; matched either way.)
registered() {
  printf '%s\n' "$1" | grep -Eiq "(^|[[:space:]])$2[[:space:]]+([a-z_]*_)?$3([[:space:]]|\$)"
}

all_registered() {
  listing=$(temporal operator search-attribute list --namespace "$NS") || return 1
  for sa in $SEARCH_ATTRIBUTES; do
    registered "$listing" "${sa%%:*}" "${sa#*:}" || return 1
  done
}

# A visibility query that names every search attribute: it fails while a frontend has no mapping for one.
every_attribute_query() {
  query=""
  for sa in $SEARCH_ATTRIBUTES; do
    case ${sa#*:} in
      Int | Double) literal=0 ;;
      *) literal="'x'" ;;
    esac
    query="${query:+$query AND }${sa%%:*} = $literal"
  done
  printf '%s\n' "$query"
}

# in_use ADDRESS : does the frontend at ADDRESS answer a query that names every search attribute?
in_use() {
  temporal workflow count --address "$1" --namespace "$NS" --query "$(every_attribute_query)"
}

log "Temporal at $TEMPORAL_ADDRESS, namespace $NS"
wait_until "the Temporal server to be SERVING" server_serving

# Nothing else creates the namespace (the server only makes its own temporal-system): create it
# when it is missing. Another setup running at the same time is fine ("already exists").
if ! namespace_exists >/dev/null 2>&1; then
  log "namespace $NS not found, creating it"
  idempotent temporal operator namespace create --namespace "$NS" --retention "$LOOPWRIGHT_RETENTION" \
    || die "could not create namespace $NS"
fi
wait_until "namespace $NS" namespace_exists
# A new namespace takes a moment to reach the server's namespace cache.
wait_until "the search attributes of namespace $NS" temporal operator search-attribute list --namespace "$NS"

for sa in $SEARCH_ATTRIBUTES; do
  name=${sa%%:*}
  type=${sa#*:}
  log "search attribute $name ($type)"
  idempotent temporal operator search-attribute create --namespace "$NS" --name "$name" --type "$type" \
    || die "could not register search attribute $name ($type)"
done

log "retention of namespace $NS: $LOOPWRIGHT_RETENTION"
idempotent temporal operator namespace update --namespace "$NS" --retention "$LOOPWRIGHT_RETENTION" \
  || die "could not set the retention of namespace $NS"

wait_until "every search attribute to be listed with its type" all_registered
for frontend in $TEMPORAL_SETUP_FRONTENDS; do
  wait_until "the frontend at $frontend to use every search attribute" in_use "$frontend"
done
log "done"

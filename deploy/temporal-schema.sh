#!/bin/sh
# Creates and migrates Temporal's two PostgreSQL databases ("temporal" and "temporal_visibility")
# with the server's own schema tool, as temporalio/auto-setup did. Run by `npm run cluster` (with
# the temporal-sql-tool it built) and by the `temporal-schema` service of docker-compose.yml
# (image temporalio/admin-tools, schema files in /etc/temporal/schema).
#
# Idempotent: an existing database is kept, `setup-schema -v 0.0` only creates the version table
# when it is missing, and `update-schema` applies the migrations not applied yet.
#
# Environment:
#   TEMPORAL_SQL_TOOL     the schema tool (default temporal-sql-tool on PATH)
#   TEMPORAL_SCHEMA_DIR   the server's schema/ folder (default /etc/temporal/schema)
#   TEMPORAL_DB_HOST, TEMPORAL_DB_PORT, TEMPORAL_DB_USER, TEMPORAL_DB_PASSWORD
#                         PostgreSQL (defaults 127.0.0.1, 5432, temporal, temporal): the same
#                         variables deploy/temporal/config/loopwright.yaml reads
set -eu

: "${TEMPORAL_SQL_TOOL:=temporal-sql-tool}"
: "${TEMPORAL_SCHEMA_DIR:=/etc/temporal/schema}"
: "${TEMPORAL_DB_HOST:=127.0.0.1}"
: "${TEMPORAL_DB_PORT:=5432}"
: "${TEMPORAL_DB_USER:=temporal}"
: "${TEMPORAL_DB_PASSWORD:=temporal}"

log() { printf '[temporal-schema] %s\n' "$*"; }

# The tool reads the password from SQL_PASSWORD, which keeps it out of `ps`.
export SQL_PASSWORD="$TEMPORAL_DB_PASSWORD"

for db in temporal temporal_visibility; do
  case $db in
    temporal) dir="$TEMPORAL_SCHEMA_DIR/postgresql/v12/temporal/versioned" ;;
    *) dir="$TEMPORAL_SCHEMA_DIR/postgresql/v12/visibility/versioned" ;;
  esac
  [ -d "$dir" ] || { printf '[temporal-schema] ERROR: no schema folder %s\n' "$dir" >&2; exit 1; }
  log "database $db"
  "$TEMPORAL_SQL_TOOL" --plugin postgres12 --endpoint "$TEMPORAL_DB_HOST" --port "$TEMPORAL_DB_PORT" \
    --user "$TEMPORAL_DB_USER" --database "$db" create-database 2>&1 | grep -v 'already exists' || true
  "$TEMPORAL_SQL_TOOL" --plugin postgres12 --endpoint "$TEMPORAL_DB_HOST" --port "$TEMPORAL_DB_PORT" \
    --user "$TEMPORAL_DB_USER" --database "$db" setup-schema -v 0.0
  "$TEMPORAL_SQL_TOOL" --plugin postgres12 --endpoint "$TEMPORAL_DB_HOST" --port "$TEMPORAL_DB_PORT" \
    --user "$TEMPORAL_DB_USER" --database "$db" update-schema -d "$dir"
done
log "done"

#!/usr/bin/env bash
# A ragpipe Celery worker ([scale].executor = "celery"; docs/scaling.md, "On a cluster").
#   deploy/celery/worker.sh warehouse   on the machine with the DuckDB file: every step but the shards
#   deploy/celery/worker.sh shards      on any other machine: parse and embed shard steps
# Needs, as every Dagster process does: RAGPIPE_SETTINGS (this machine's settings file), the RAGPIPE_PG_* variables
# and DAGSTER_HOME with deploy/postgres/dagster.yaml, AWS_ACCESS_KEY_ID/AWS_SECRET_ACCESS_KEY for the staging and
# LanceDB buckets, and REDIS_PASSWORD if the broker has one. One step at a time per worker (-c 1): start more workers
# (or machines) for more shards at once.
set -euo pipefail
cd "$(dirname "$0")/../.."
case "${1:-}" in
  warehouse) queue=$(.venv/bin/python -c 'from ragpipe.settings import load_settings; print(load_settings().scale.warehouse_queue)') ;;
  shards) queue=dagster ;;
  *) echo "usage: $0 warehouse|shards" >&2; exit 2 ;;
esac
exec .venv/bin/celery -A ragpipe.assets.worker worker -Q "$queue" -c 1 -n "ragpipe-$1@%h" --without-gossip --without-mingle

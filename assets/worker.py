"""The Celery app a cluster worker serves ([scale].executor = "celery", docs/scaling.md):

    RAGPIPE_SETTINGS=/srv/ragpipe/ragpipe.toml celery -A ragpipe.assets.worker worker -Q ragpipe-warehouse -c 1
        the machine with the DuckDB file: every step but the shards ([scale].warehouse_queue)
    RAGPIPE_SETTINGS=/srv/ragpipe/ragpipe.toml celery -A ragpipe.assets.worker worker -Q dagster -c 1
        any other machine: the parse and embed shards (deploy/celery/worker.sh starts either)

Reads the settings file of this machine ($RAGPIPE_SETTINGS, else ./ragpipe.toml) for the broker and the queues.
"""

import ragpipe  # noqa: F401  (sets the offline/telemetry environment before anything else loads)
from ragpipe.assets.cluster import worker_app
from ragpipe.settings import load_settings

app = worker_app(load_settings())

"""[scale]: parsing and embedding split into parallel steps, and the executor that places them (docs/scaling.md)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from urllib.parse import urlsplit

from ragpipe.settings.base import SettingsError

EXECUTORS = ("multiprocess", "celery")


@dataclass(frozen=True)
class ScaleSettings:
    # Static hash partitions of documents whose new chunks are embedded in separate Dagster steps: the multiprocess
    # executor runs them in parallel here, a cluster executor on other machines. Part of no stage's code version:
    # the vectors do not depend on how the work was split.
    embed_shards: int = 1
    # The same for parsing: new and changed files parsed in N steps by a static hash of their path
    # (ragpipe.ingest.parse_shards).
    parse_shards: int = 1
    # The documents stage embeds each parsed document's new chunk texts in a background thread while the parser
    # worker reads the next file (ragpipe.embed.while_parsing); the embeddings stage then embeds only what is left. Off:
    # the stages run one after the other. Part of no code version: the vectors are the same either way.
    embed_while_parsing: bool = True
    # Where a multi-process run's steps go: "multiprocess" (one process per step on this machine, Dagster's default)
    # or "celery" (dagster-celery: each step is a task on a Celery queue served by workers on other machines).
    executor: str = "multiprocess"
    # The Celery broker (and result backend): a redis:// URL without a password (REDIS_PASSWORD in the environment
    # supplies one).
    broker: str = "redis://127.0.0.1:6379/0"
    # The queue of the steps that write the warehouse (the "duckdb" pool): served only by the worker that holds the
    # DuckDB file. Every other step goes to Celery's default queue, "dagster", which any worker may serve.
    warehouse_queue: str = "ragpipe-warehouse"
    # A step taken by a worker that then vanished (machine lost, SIGKILL) goes back on its queue after this many
    # seconds: longer than the longest step, or a slow step is run twice.
    visibility_timeout_s: int = 3600


def check(s: ScaleSettings, src: Path) -> None:
    if not 1 <= s.embed_shards <= 64:
        raise SettingsError(f"{src}: [scale].embed_shards must be between 1 and 64, got {s.embed_shards}")
    if not 1 <= s.parse_shards <= 64:
        raise SettingsError(f"{src}: [scale].parse_shards must be between 1 and 64, got {s.parse_shards}")
    if s.executor not in EXECUTORS:
        raise SettingsError(f"{src}: [scale].executor must be one of {', '.join(EXECUTORS)}, got {s.executor!r}")
    url = urlsplit(s.broker)
    if url.scheme not in ("redis", "rediss") or not url.hostname:
        raise SettingsError(f"{src}: [scale].broker must be a redis://HOST:PORT/DB URL, got {s.broker!r}")
    if url.password:
        raise SettingsError(
            f"{src}: [scale].broker: a password does not belong in the settings; set REDIS_PASSWORD in the environment "
            "of every Dagster process and worker"
        )
    if not s.warehouse_queue.strip() or s.warehouse_queue == "dagster":
        raise SettingsError(f"{src}: [scale].warehouse_queue must be a queue name other than 'dagster'")
    if s.visibility_timeout_s < 1:
        raise SettingsError(f"{src}: [scale].visibility_timeout_s must be at least 1, got {s.visibility_timeout_s}")

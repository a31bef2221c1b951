"""The cluster executor ([scale].executor = "celery"): dagster-celery, with the warehouse writers routed to one queue.

Every step of a run becomes a Celery task. The parse and embed shard steps (tagged `ragpipe/shard`: they touch no
database, only the staging and, for parsing, the files to parse) go to Celery's default queue, "dagster", which any
worker serves. Every other step (the "duckdb" pool's plans, merges and stages, and the checks that read the warehouse)
goes to `[scale].warehouse_queue`, served only by the worker on the machine that holds the DuckDB file. The routing
follows the tags each step already carries, so it is part of the job, not of a deployment script.
Workers: `celery -A ragpipe.assets.worker worker ...` (docs/scaling.md).
"""

from __future__ import annotations

import os
import warnings
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import dagster as dg
from dagster_celery.executor import CeleryExecutor, _submit_task

from ragpipe.assets.dagster_internals import retries_disabled
from ragpipe.core import RagpipeError
from ragpipe.settings import ScaleSettings, Settings

SHARD_TAG = "ragpipe/shard"
QUEUE_TAG = "dagster-celery/queue"  # dagster_celery.tags.DAGSTER_CELERY_QUEUE_TAG
SHARD_QUEUE = "dagster"  # dagster-celery's own default queue
PASSWORD_ENV = "REDIS_PASSWORD"


class BrokerUnavailable(RagpipeError):
    """The Celery broker cannot be reached; the message names it and what to do."""


def broker_url(scale: ScaleSettings) -> str:
    """[scale].broker with $REDIS_PASSWORD put in (the settings never hold it)."""
    password = os.environ.get(PASSWORD_ENV)
    if not password:
        return scale.broker
    parts = urlsplit(scale.broker)
    netloc = f":{password}@{parts.netloc}"
    return urlunsplit(parts._replace(netloc=netloc))


def shard_tags(i: int, shards: int) -> dict[str, str]:
    """A shard step's tags: which shard, and the queue any worker serves (every other step: the warehouse queue)."""
    return {SHARD_TAG: f"{i}/{shards}", QUEUE_TAG: SHARD_QUEUE}


def app_config(scale: ScaleSettings) -> dict[str, Any]:
    """Celery settings the executor and every worker share (the worker builds its app from the same settings file)."""
    return {
        "task_default_queue": scale.warehouse_queue,  # a step without a queue tag writes or reads the warehouse
        "task_acks_late": True,  # a task is acknowledged when it ends: a worker lost mid-step leaves it queued
        "task_reject_on_worker_lost": True,  # a killed worker process puts its task back at once
        "worker_prefetch_multiplier": 1,  # a worker holds no step it has not started
        "broker_transport_options": {
            "visibility_timeout": scale.visibility_timeout_s,
            "unacked_restore_interval": max(1, min(10, scale.visibility_timeout_s // 4)),
            "unacked_restore_throttle": 1,
            "max_retries": 3,
            "interval_start": 0,
            "interval_step": 0.2,
            "interval_max": 0.5,
        },
        "result_expires": 7 * 24 * 3600,
    }


def check_broker(scale: ScaleSettings) -> None:
    """Fail before any step is queued when the broker is down: one line that names it and what to do."""
    import redis

    try:
        redis.Redis.from_url(broker_url(scale), socket_connect_timeout=3, socket_timeout=3).ping()
    except redis.exceptions.RedisError as exc:
        reason = str(exc).replace(os.environ.get(PASSWORD_ENV) or "\0", "***").rstrip(".")
        raise BrokerUnavailable(
            f"cannot reach the Celery broker {scale.broker} ([scale].broker): {reason}. Start Redis there (or fix "
            "the URL) and launch the run again; no step of this run was queued"
        ) from None


class RoutedCeleryExecutor(CeleryExecutor):
    """dagster-celery's executor, whose default queue is the warehouse worker's (only shard steps name another), and
    which checks the broker before it queues anything."""

    def __init__(self, scale: ScaleSettings) -> None:
        url = broker_url(scale)
        super().__init__(
            retries=retries_disabled(),
            broker=url,
            backend=url,
            config_source=app_config(scale),
        )
        self.scale = scale

    def execute(self, plan_context: Any, execution_plan: Any) -> Any:
        from dagster_celery.core_execution_loop import core_celery_execution_loop

        check_broker(self.scale)
        # dagster-celery registers its task again for every step it submits; Celery warns each time, harmlessly
        warnings.filterwarnings("ignore", message="Task name 'execute_plan' is already registered")
        return core_celery_execution_loop(plan_context, execution_plan, step_execution_fn=_submit_task)


def build_executor(settings: Settings) -> dg.ExecutorDefinition | None:
    """The executor of the code location's jobs: None (Dagster's multiprocess default) unless [scale] says celery."""
    if settings.scale.executor != "celery":
        return None
    scale = settings.scale

    @dg.executor(name="ragpipe_celery", requirements=dg.multiple_process_executor_requirements())
    def ragpipe_celery(_init_context: Any) -> RoutedCeleryExecutor:
        return RoutedCeleryExecutor(scale)

    return ragpipe_celery


def worker_app(settings: Settings) -> Any:
    """The Celery app a worker serves: the executor's app, with the warehouse queue declared beside the shards'."""
    from dagster_celery.make_app import make_app
    from dagster_celery.tasks import create_task
    from kombu import Queue

    app = make_app(RoutedCeleryExecutor(settings.scale).app_args())
    queue = settings.scale.warehouse_queue
    app.conf.task_queues = [
        *app.conf.task_queues,
        Queue(queue, routing_key=f"{queue}.#", queue_arguments={"x-max-priority": 10}),
    ]
    create_task(app)
    return app

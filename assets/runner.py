"""Run the graph in-process against the project's persistent Dagster instance (the runs show in the UI),
and tell what is stale and why, down the whole chain (Dagster's own staleness stops at the first asset)."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import dagster as dg
from dagster._core.definitions.data_version import CachingStaleStatusResolver, StaleStatus
from dagster._core.loader import LoadingContext

from assets import build_definitions


class _Loading(LoadingContext):
    def __init__(self, instance: dg.DagsterInstance):
        self._instance = instance
        self._loaders: dict = {}

    @property
    def instance(self) -> dg.DagsterInstance:
        return self._instance

    @property
    def loaders(self) -> dict:
        return self._loaders


def project_instance(root: Path) -> dg.DagsterInstance:
    """The instance configured by dagster.yaml in `root` (DAGSTER_HOME wins when set)."""
    import fcntl
    import hashlib
    import tempfile

    home = Path(os.environ.get("DAGSTER_HOME") or root).resolve()
    # Two processes creating a fresh instance at once race in Dagster's sqlite storage set-up ("table runs already
    # exists"): one creates it at a time (a lock file outside the project, keyed by the instance directory). Other
    # storages (deploy/postgres/dagster.yaml) only pass through the lock; dagster-postgres retries its own set-up.
    lock = Path(tempfile.gettempdir()) / f"ragpipe-instance-{hashlib.sha256(str(home).encode()).hexdigest()[:16]}.lock"
    with open(lock, "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        if os.environ.get("DAGSTER_HOME"):
            return dg.DagsterInstance.get()
        cwd = Path.cwd()
        os.chdir(root)  # dagster.yaml's relative storage paths resolve against the working directory
        try:
            return dg.DagsterInstance.from_config(str(root))
        finally:
            os.chdir(cwd)


@dataclass(frozen=True)
class AssetState:
    key: str
    status: str  # fresh | stale | missing | stale-upstream
    causes: tuple[str, ...]
    failure: str | None = None  # its latest planned materialization failed: "<error> (run <id>, <time>)"


def step_error(err: Any) -> tuple[str, str]:
    """(class, message) of the error a step failed with, under Dagster's wrapper (and a dg.Failure's cause)."""
    root = err.cause or err
    while root.cause is not None and "DagsterExecutionStepExecutionError" in root.cls_name:
        root = root.cause
    return root.cls_name, root.message.strip().split(": ", 1)[-1]


def last_failure(instance: dg.DagsterInstance, key: dg.AssetKey) -> str | None:
    """When the newest run that planned to materialize `key` failed at it: its error's first line, the run and time."""
    import datetime as dt

    from dagster._core.events import DagsterEventType

    info = instance.get_latest_planned_materialization_info(key)
    if info is None:
        return None
    latest = instance.get_latest_materialization_event(key)
    if latest is not None and latest.run_id == info.run_id:
        return None
    for record in instance.all_logs(info.run_id, of_type=DagsterEventType.STEP_FAILURE):
        ev = record.dagster_event
        if ev is None or ev.step_key != key.to_user_string() or not ev.step_failure_data or not ev.step_failure_data.error:
            continue
        cls, message = step_error(ev.step_failure_data.error)
        lines = message.splitlines()
        first = lines[0] + (f" {lines[1].strip()}" if lines[0].endswith(":") and len(lines) > 1 else "")
        when = dt.datetime.fromtimestamp(record.timestamp, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        return f"{cls}: {first} (run {info.run_id[:8]}, {when})"
    return None


# Asset groups that run on demand only (`ragpipe niah run`): never selected by ci/demo, absent from `status`.
ON_DEMAND_GROUPS = ("niah",)


def on_demand_keys(defs: dg.Definitions) -> set[dg.AssetKey]:
    return set(dg.AssetSelection.groups(*ON_DEMAND_GROUPS).resolve(defs.resolve_asset_graph()))


def asset_states(defs: dg.Definitions, instance: dg.DagsterInstance) -> list[AssetState]:
    """Every asset in dependency order with its own status, and 'stale-upstream' where an ancestor needs a run."""
    graph = defs.resolve_asset_graph()
    resolver = CachingStaleStatusResolver(instance=instance, asset_graph=graph, loading_context=_Loading(instance))
    states: dict[dg.AssetKey, AssetState] = {}
    skip = on_demand_keys(defs)
    for key in graph.toposorted_asset_keys:
        if key in skip:
            continue
        status = resolver.get_status(key)
        causes = tuple(f"{c.key.asset_key.to_user_string()}: {c.reason}" for c in resolver.get_stale_causes(key))
        own = {StaleStatus.MISSING: "missing", StaleStatus.STALE: "stale"}.get(status, "fresh")
        parents = [states[p] for p in graph.get(key).parent_keys if p in states]
        upstream = [p.key for p in parents if p.status != "fresh"]
        if own == "fresh" and upstream:
            own, causes = "stale-upstream", tuple(f"upstream {u} needs a run" for u in upstream)
        states[key] = AssetState(key.to_user_string(), own, causes, last_failure(instance, key))
    return list(states.values())


HOST_TAG, PID_TAG = "ragpipe/host", "ragpipe/pid"  # where an in-process run runs


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def release_dead_runs(instance: dg.DagsterInstance) -> list[str]:
    """Fail the in-process runs whose process died (SIGKILL, OOM, power loss) and free their pool slots.

    A killed run stays STARTED and keeps its "duckdb" pool slot (dagster.yaml: limit 1), so without this every
    later run on the instance waits for that slot forever. Only runs started by `materialize` on this host.
    """
    from dagster._core.storage.dagster_run import DagsterRunStatus

    released = []
    statuses = [DagsterRunStatus.STARTING, DagsterRunStatus.STARTED, DagsterRunStatus.CANCELING]
    for run in instance.get_runs(filters=dg.RunsFilter(statuses=statuses, tags={HOST_TAG: socket.gethostname()})):
        pid = int(run.tags.get(PID_TAG) or 0)
        if not pid or _pid_alive(pid):
            continue
        instance.report_run_failed(run, f"the process running this run (pid {pid}) died without finishing it")
        instance.event_log_storage.free_concurrency_slots_for_run(run.run_id)
        released.append(run.run_id)
    return released


def _job_from_env() -> dg.JobDefinition:
    """ragpipe_job of the settings in $RAGPIPE_SETTINGS, rebuilt in every step process of the multiprocess executor."""
    return build_definitions(os.environ.get("RAGPIPE_SETTINGS")).get_job_def("ragpipe_job")


def materialize(
    settings_file: str | None = None,
    selection: list[str] | None = None,
    instance: dg.DagsterInstance | None = None,
    tags: dict[str, str] | None = None,
    multiprocess: bool = False,
) -> dg.ExecuteInProcessResult | dg.ExecutionResult:
    """Materialize `selection` (default: the whole graph less the on-demand groups) in this process, or with
    `multiprocess` one process per step (what `dagster dev` and the daemon do), so embedding shards run in parallel."""
    defs = build_definitions(settings_file)
    if instance is not None:
        release_dead_runs(instance)
    if selection is None:  # the whole graph, less the on-demand groups
        skip = on_demand_keys(defs)
        selection = [k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys() if k not in skip]
    run_tags = {**(tags or {}), HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}
    # Progress (INFO) on the console; Dagster's step-by-step DEBUG events stay in the run's event log.
    run_config = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
    if multiprocess:
        from ragpipe.settings import settings_path

        os.environ["RAGPIPE_SETTINGS"] = str(settings_path(settings_file).resolve())  # read by _job_from_env
        with dg.execute_job(
            dg.reconstructable(_job_from_env),
            instance=instance or dg.DagsterInstance.get(),
            asset_selection=[dg.AssetKey.from_user_string(k) for k in selection],
            tags=run_tags,
            raise_on_error=False,
            run_config=run_config,
        ) as result:
            return result
    return dg.materialize(
        list(defs.assets or []),
        resources=dict(defs.resources or {}),
        instance=instance,
        selection=selection,
        tags=run_tags,
        raise_on_error=False,
        run_config=run_config,
    )


def materialize_stale(
    settings_file: str | None = None,
    instance: dg.DagsterInstance | None = None,
    tags: dict[str, str] | None = None,
    multiprocess: bool = False,
) -> tuple[list[str], dg.ExecuteInProcessResult | dg.ExecutionResult | None]:
    """Observe the corpus, then materialize exactly the missing or stale assets and everything below them.

    Returns the selected keys and the run result (None when everything was fresh).
    """
    instance = instance or dg.DagsterInstance.ephemeral()
    first = materialize(settings_file, ["corpus"], instance, tags)  # cheap: a scan; its data version tells if files changed
    if not first.success:
        return ["corpus"], first
    defs = build_definitions(settings_file)
    todo = [s.key for s in asset_states(defs, instance) if s.status != "fresh"]
    if not todo:
        return [], None
    return todo, materialize(settings_file, todo, instance, tags, multiprocess)

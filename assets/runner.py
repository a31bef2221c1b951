"""Run the graph in-process against the project's persistent Dagster instance (the runs show in the UI)."""

from __future__ import annotations

import os
import socket
from pathlib import Path
from typing import Any

import dagster as dg

from ragpipe.assets import build_definitions
from ragpipe.assets.staleness import AssetState, asset_states, last_failure, on_demand_keys, step_error

__all__ = ["AssetState", "asset_states", "last_failure", "step_error", "materialize", "materialize_stale"]


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
    released = []
    statuses = [dg.DagsterRunStatus.STARTING, dg.DagsterRunStatus.STARTED, dg.DagsterRunStatus.CANCELING]
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
    return build_definitions(os.environ.get("RAGPIPE_SETTINGS")).resolve_job_def("ragpipe_job")


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
        skip = on_demand_keys(defs.resolve_asset_graph())
        selection = [k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys() if k not in skip]
    run_tags = {**(tags or {}), HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid())}
    # Progress (INFO) on the console; Dagster's step-by-step DEBUG events stay in the run's event log.
    run_config = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}
    if multiprocess:
        from ragpipe.settings import settings_path

        before = os.environ.get("RAGPIPE_SETTINGS")
        os.environ["RAGPIPE_SETTINGS"] = str(settings_path(settings_file).resolve())  # read by _job_from_env
        try:
            with dg.execute_job(
                dg.reconstructable(_job_from_env),
                instance=instance or dg.DagsterInstance.get(),
                asset_selection=[dg.AssetKey.from_user_string(k) for k in selection],
                tags=run_tags,
                raise_on_error=False,
                run_config=run_config,
            ) as result:
                return result
        finally:  # only the run's step processes read it: a later call in this process names its own settings
            if before is None:
                os.environ.pop("RAGPIPE_SETTINGS", None)
            else:
                os.environ["RAGPIPE_SETTINGS"] = before
    keys = {dg.AssetKey.from_user_string(k) for k in selection}
    job = _named_job(defs, keys)
    if job is None:  # a selection across both jobs: Dagster's ad hoc job
        return dg.materialize(
            [*(defs.assets or []), *(defs.asset_checks or [])],
            resources=dict(defs.resources or {}),
            instance=instance,
            selection=selection,
            tags=run_tags,
            raise_on_error=False,
            run_config=run_config,
        )
    return job.execute_in_process(
        instance=instance, asset_selection=sorted(keys), tags=run_tags, raise_on_error=False, run_config=run_config
    )


def _named_job(defs: dg.Definitions, keys: set[dg.AssetKey]) -> dg.JobDefinition | None:
    """The named job (ragpipe_job, or niah_job / monitor_job for those on-demand assets) that holds every key: the
    run shows under that name in the UI's Runs list, not as an ad hoc asset job."""
    for name in ("ragpipe_job", "niah_job", "monitor_job"):
        job = defs.resolve_job_def(name)
        if keys <= set(job.asset_layer.executable_asset_keys):
            return job
    return None


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
    first = materialize(
        settings_file, ["corpus"], instance, tags
    )  # cheap: a scan; its data version tells if files changed
    if not first.success:
        return ["corpus"], first
    defs = build_definitions(settings_file)
    todo = [s.key for s in asset_states(defs.resolve_asset_graph(), instance) if s.status != "fresh"]
    if not todo:
        return [], None
    return todo, materialize(settings_file, todo, instance, tags, multiprocess)


def run_compare(settings_file: str, overrides: list[str], candidate: str, instance: dg.DagsterInstance) -> Any:
    """The ragpipe_compare job in this process, on the project's instance (the run shows in the UI): the Comparison,
    or the failed run's result."""
    from ragpipe.reports import Comparison

    job = build_definitions(settings_file).get_job_def("ragpipe_compare")
    result = job.execute_in_process(
        run_config={
            "ops": {"compare": {"config": {"overrides": overrides, "candidate": candidate}}},
            "loggers": {"console": {"config": {"log_level": "INFO"}}},
        },
        instance=instance,
        tags={HOST_TAG: socket.gethostname(), PID_TAG: str(os.getpid()), "ragpipe/trigger": "cli"},
        raise_on_error=False,
    )
    if not result.success:
        return result  # the caller words the failure (cli.failure_lines)
    out: Comparison = result.output_for_node("compare")
    return out

"""What is stale and why, down the whole chain (Dagster's own staleness stops at the first asset), and why the
latest attempt at an asset failed: read by `ragpipe status`, `ragpipe ci` and the inputs_current sensor (`ragpipe_currency`)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import dagster as dg

from ragpipe.assets.causes import explain
from ragpipe.assets.dagster_internals import BaseAssetGraph, StaleStatus, stale_status_resolver


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

    info = instance.get_latest_planned_materialization_info(key)
    if info is None:
        return None
    latest = instance.get_latest_materialization_event(key)
    if latest is not None and latest.run_id == info.run_id:
        return None
    for record in instance.all_logs(info.run_id, of_type=dg.DagsterEventType.STEP_FAILURE):
        ev = record.dagster_event
        if (
            ev is None
            or ev.step_key != key.to_user_string()
            or not ev.step_failure_data
            or not ev.step_failure_data.error
        ):
            continue
        cls, message = step_error(ev.step_failure_data.error)
        lines = message.splitlines()
        first = lines[0] + (f" {lines[1].strip()}" if lines[0].endswith(":") and len(lines) > 1 else "")
        when = dt.datetime.fromtimestamp(record.timestamp, dt.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
        return f"{cls}: {first} (run {info.run_id[:8]}, {when})"
    return None


# Asset groups that run on demand only (`ragpipe niah run`, `ragpipe golden suggest`) or on their own sensor (the
# production traces): never selected by ci/demo, absent from `status`.
ON_DEMAND_GROUPS = ("niah", "authoring", "monitor")


def on_demand_keys(graph: BaseAssetGraph) -> set[dg.AssetKey]:
    return set(dg.AssetSelection.groups(*ON_DEMAND_GROUPS).resolve(graph))


def asset_states(graph: BaseAssetGraph, instance: dg.DagsterInstance) -> list[AssetState]:
    """Every asset in dependency order with its own status, and 'stale-upstream' where an ancestor needs a run."""
    resolver = stale_status_resolver(instance, graph)
    states: dict[dg.AssetKey, AssetState] = {}
    skip = on_demand_keys(graph)
    for key in graph.toposorted_asset_keys:
        if key in skip:
            continue
        status = resolver.get_status(key)
        causes = tuple(dict.fromkeys(explain(graph, instance, c) for c in resolver.get_stale_causes(key)))
        own = {StaleStatus.MISSING: "missing", StaleStatus.STALE: "stale"}.get(status, "fresh")
        parents = [states[p] for p in graph.get(key).parent_keys if p in states]
        upstream = [p.key for p in parents if p.status != "fresh"]
        if own == "fresh" and upstream:
            own, causes = "stale-upstream", tuple(f"upstream {u} needs a run" for u in upstream)
        states[key] = AssetState(key.to_user_string(), own, causes, last_failure(instance, key))
    return list(states.values())

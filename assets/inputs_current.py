"""Staleness down the chain, in the UI, as soon as definitions reload.

Dagster marks an asset stale when its own code version changed or a direct parent has a newer data version; it does
not propagate a parent's *pending* change: after a chunker change only `chunks` looks stale until the run reaches
the next asset. ragpipe keeps one code version per stage (a chunker change must not re-version the answerer), so
the chain is shown by an asset check instead: `inputs_current` on every asset below the corpus, failed (WARN) while
anything upstream is stale, missing or failed its latest attempt, with the root causes in its description.

The inputs_current sensor (`ragpipe_currency`) evaluates it every few seconds from the instance alone (no database, no model) and reports a
result only when it changes; the same check runs at the end of a run that selects it.
"""

from typing import Any, Iterator

import dagster as dg

from ragpipe.assets.dagster_internals import BaseAssetGraph
from ragpipe.assets.errors import door
from ragpipe.assets.staleness import AssetState, asset_states, on_demand_keys

CHECK_NAME = "inputs_current"
CHECK_DESCRIPTION = (
    "Everything this asset was computed from is current: no upstream asset is stale, missing or "
    "failed its latest attempt. Fails (WARN) from the moment definitions reload after a settings, "
    "corpus or golden set change until the run that follows has reached this asset."
)
CURRENT = "current: every input up to the corpus is as it was when this was materialized"
IN_FLIGHT = [
    dg.DagsterRunStatus.QUEUED,
    dg.DagsterRunStatus.NOT_STARTED,
    dg.DagsterRunStatus.STARTING,
    dg.DagsterRunStatus.STARTED,
]


def checked_keys(graph: BaseAssetGraph) -> list[dg.AssetKey]:
    """The main graph's assets that have something upstream (the corpus is a root; niah runs on demand)."""
    skip = on_demand_keys(graph)
    return [k for k in graph.toposorted_asset_keys if k not in skip and graph.get(k).parent_keys]


def _upstream_problems(graph: BaseAssetGraph, states: dict[str, AssetState], key: dg.AssetKey) -> Iterator[str]:
    """Root causes only: an ancestor that is itself stale, missing or failed (not one that merely inherits it)."""
    ancestors = graph.get_ancestor_asset_keys(key) | {key}
    for a in graph.toposorted_asset_keys:
        s = states.get(a.to_user_string())
        if a not in ancestors or s is None:
            continue
        if s.status in ("stale", "missing"):
            yield "; ".join(s.causes) if s.causes else f"{s.key}: {s.status}"
        if s.failure:
            yield f"the latest attempt at {s.key} failed: {s.failure}"


def _corpus_run_pending(instance: dg.DagsterInstance) -> str | None:
    """The corpus sensor saw the files change and its run has not synced them yet: nothing below is current."""
    runs = instance.get_runs(filters=dg.RunsFilter(tags={"ragpipe/trigger": "corpus"}, statuses=IN_FLIGHT), limit=1)
    manifest = runs[0].tags.get("ragpipe/corpus_manifest") if runs else None
    latest = instance.get_latest_materialization_event(dg.AssetKey("corpus"))
    event = latest.asset_materialization if latest else None
    synced = (event.tags or {}).get("dagster/data_version") if event else None
    if manifest is None or manifest == synced:
        return None
    return f"corpus: files changed on disk; run {runs[0].run_id[:8]} is ingesting them"


def evaluate_inputs_current(graph: BaseAssetGraph, instance: dg.DagsterInstance) -> dict[dg.AssetKey, tuple[bool, str]]:
    """(passed, description) of `inputs_current` for every checked asset."""
    states = {s.key: s for s in asset_states(graph, instance)}
    pending = _corpus_run_pending(instance)
    out: dict[dg.AssetKey, tuple[bool, str]] = {}
    for key in checked_keys(graph):
        problems = list(dict.fromkeys([*([pending] if pending else []), *_upstream_problems(graph, states, key)]))
        out[key] = (
            not problems,
            "NOT CURRENT (changed upstream since this was materialized): " + " | ".join(problems)
            if problems
            else CURRENT,
        )
    return out


def _evaluation(key: dg.AssetKey, passed: bool, description: str) -> dg.AssetCheckEvaluation:
    return dg.AssetCheckEvaluation(
        asset_key=key,
        check_name=CHECK_NAME,
        passed=passed,
        severity=dg.AssetCheckSeverity.WARN,
        description=description,
        metadata={"reason": dg.MetadataValue.text(description)},
    )


def _last_reported(record: Any) -> tuple[bool, str] | None:
    event = record.event if record is not None else None
    data = event.dagster_event.event_specific_data if event is not None and event.dagster_event else None
    if not isinstance(data, dg.AssetCheckEvaluation):
        return None
    return data.passed, data.description or ""


def _before_latest_materialization(instance: dg.DagsterInstance, key: dg.AssetKey, record: Any) -> bool:
    """The UI ties a check execution to the materialization before the time it was planned: a run's own check,
    planned at the run's start, reads "Not evaluated" beside the materialization that run made. Report it after."""
    if record is None:
        return False
    latest = instance.get_latest_materialization_event(key)
    return latest is not None and _planned_at(instance, record) < latest.timestamp


def _planned_at(instance: dg.DagsterInstance, record: Any) -> float:
    """When the check was planned, to the sub-second: the record's own create_timestamp is whole seconds on
    SQLite, so a report made in the same second as the materialization would read as made before it."""
    if not record.run_id:  # a runless report: planned and evaluated at once
        return record.event.timestamp if record.event is not None else record.create_timestamp
    run = instance.get_run_record_by_id(record.run_id)
    return run.start_time if run is not None and run.start_time else record.create_timestamp


def report_changes(graph: BaseAssetGraph, instance: dg.DagsterInstance) -> list[dg.AssetKey]:
    """Report `inputs_current` for each asset whose result differs from its latest recorded one; returns those."""
    results = evaluate_inputs_current(graph, instance)
    latest = instance.event_log_storage.get_latest_asset_check_execution_by_key(
        [dg.AssetCheckKey(k, CHECK_NAME) for k in results]
    )
    changed = []
    for key, (passed, description) in results.items():
        record = latest.get(dg.AssetCheckKey(key, CHECK_NAME))
        if _last_reported(record) != (passed, description) or _before_latest_materialization(instance, key, record):
            instance.report_runless_asset_event(_evaluation(key, passed, description))
            changed.append(key)
    return changed


def build_inputs_current_checks(graph_keys: list[dg.AssetKey]) -> dg.AssetChecksDefinition:
    @dg.multi_asset_check(
        name="inputs_current",
        specs=[dg.AssetCheckSpec(CHECK_NAME, asset=k, description=CHECK_DESCRIPTION) for k in graph_keys],
        can_subset=True,
    )
    @door
    def inputs_current(context: dg.AssetCheckExecutionContext) -> Iterator[dg.AssetCheckResult]:
        results = evaluate_inputs_current(
            context.op_execution_context.job_def.asset_layer.asset_graph, context.instance
        )
        for check_key in context.selected_asset_check_keys:
            passed, description = results.get(check_key.asset_key, (True, CURRENT))
            yield dg.AssetCheckResult(
                asset_key=check_key.asset_key,
                check_name=CHECK_NAME,
                passed=passed,
                severity=dg.AssetCheckSeverity.WARN,
                description=description,
                metadata={"reason": dg.MetadataValue.text(description)},
            )

    return inputs_current


def inputs_current_sensor() -> dg.SensorDefinition:
    @dg.sensor(
        name="ragpipe_currency",
        minimum_interval_seconds=15,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Marks every asset below a change as not current (the inputs_current check) as soon as "
        "definitions reload, and current again once the run has reached it. Launches nothing.",
    )
    def ragpipe_currency(context: dg.SensorEvaluationContext) -> dg.SkipReason:
        if context.repository_def is None:
            return dg.SkipReason("no repository")
        changed = report_changes(context.repository_def.asset_graph, context.instance)
        names = ", ".join(k.to_user_string() for k in changed)
        return dg.SkipReason(f"inputs_current reported for {names}" if changed else "no change")

    return ragpipe_currency

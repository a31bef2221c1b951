"""Why an asset is stale, in the user's words: Dagster says 'has a new code version' or 'has a new dependency data
version'; the definitions and materializations carry what each asset is computed from (assets/inputs.py), so the
cause can be named: '[retriever].k 5 -> 8', 'golden file: neg_03 edited', 'corpus: policies/x.txt deleted'."""

import datetime as dt
from typing import Any

import dagster as dg

from ragpipe.assets.dagster_internals import BaseAssetGraph, StaleCause, StaleCauseCategory
from ragpipe.assets.inputs import CHANGE, SETTINGS, TESTS, json_entry
from ragpipe.assets.triggers import trigger_of
from ragpipe.core import keyed_diff, settings_diff

CORPUS = dg.AssetKey("corpus")


def _latest(instance: dg.DagsterInstance, key: dg.AssetKey) -> Any:
    record = instance.get_latest_materialization_event(key)
    return record if record is not None and record.asset_materialization is not None else None


def code_change(graph: BaseAssetGraph, instance: dg.DagsterInstance, key: dg.AssetKey) -> str:
    """What differs between the definition and the latest materialization: settings, golden tests, else the code."""
    node = graph.get(key)
    record = _latest(instance, key)
    old = record.asset_materialization.metadata if record else {}
    parts = []
    old_settings, new_settings = json_entry(old, SETTINGS), json_entry(node.metadata, SETTINGS)
    if old_settings is not None and new_settings is not None:
        parts += [f"settings {d}" for d in settings_diff(old_settings, new_settings)]
    old_tests, new_tests = json_entry(old, TESTS), json_entry(node.metadata, TESTS)
    if old_tests is not None and new_tests is not None and (edits := keyed_diff(old_tests, new_tests)):
        parts.append(f"golden file: {edits}")
    if parts:
        return "; ".join(parts)
    was = (record.asset_materialization.tags or {}).get("dagster/code_version") if record else None
    return f"ragpipe's code for it changed (code version {was or 'unknown'} -> {node.code_version})"


def data_change(instance: dg.DagsterInstance, dep: dg.AssetKey) -> str:
    """The upstream materialization this asset has not seen yet: when, by which run, and the corpus change it began
    with when that run synced the corpus."""
    record = _latest(instance, dep)
    if record is None:
        return f"{dep.to_user_string()} has new data"
    when = dt.datetime.fromtimestamp(record.timestamp, dt.timezone.utc).strftime("%H:%M:%S UTC")
    run = instance.get_run_by_id(record.run_id)
    trigger = trigger_of(run.tags) if run else "unknown"
    corpus = _latest(instance, CORPUS)
    change = corpus.asset_materialization.metadata.get(CHANGE) if corpus and corpus.run_id == record.run_id else None
    done = f"{dep.to_user_string()} re-materialized at {when}, run {record.run_id[:8]}, {trigger}"
    if change is not None and change.value != "nothing":
        return f"corpus: {change.value} ({done})"
    return done


def explain(graph: BaseAssetGraph, instance: dg.DagsterInstance, cause: StaleCause) -> str:
    """'<asset>: <what changed>' for one of Dagster's stale causes."""
    key = cause.key.asset_key
    if cause.category == StaleCauseCategory.CODE:
        return f"{key.to_user_string()}: {code_change(graph, instance, key)}"
    if cause.category == StaleCauseCategory.DATA and cause.dependency is not None:
        return f"{key.to_user_string()}: {data_change(instance, cause.dependency.asset_key)}"
    return f"{key.to_user_string()}: {cause.reason}"

"""Why a run ran, from its tags: one word for the warehouse's eval_runs.trigger, the inputs_current causes and the UI.

The automation sensor tags every run it requests `settings`; an evaluation step of such a run names what actually
changed since its own last materialization (`automation_trigger`): the app under test (`subject`), the golden set
(`golden`), its settings (`settings`), or an upstream asset re-materialized (`upstream`), joined with "+" when more
than one did."""

from typing import Any, Mapping

import dagster as dg

from ragpipe.assets.inputs import SETTINGS, TESTS, json_entry

AUTOMATION = "settings"  # the automation sensor's run tag (assets/automation.py)
READ_BY = "ragpipe/trigger_read_by"  # the step that read what changed; later steps of the run keep its word
SUBJECT = dg.AssetKey("subject")


def trigger_of(tags: Mapping[str, str]) -> str:
    """corpus (the corpus sensor), settings (the automation sensor: a settings, golden set or code change), scheduled,
    retry (Dagster re-ran a failed run), cli, ci, demo, or manual (the UI's Materialize)."""
    if "dagster/retry_number" in tags:
        return "retry"
    if "ragpipe/trigger" in tags:
        return tags["ragpipe/trigger"]
    if "dagster/schedule_name" in tags:
        return "scheduled"
    if "dagster/sensor_name" in tags or "dagster/auto_materialize" in tags:
        return "settings"
    return "manual"


def automation_trigger(
    instance: dg.DagsterInstance,
    key: dg.AssetKey,
    definition: Mapping[str, Any],
    deps: list[dg.AssetKey],
    run_id: str,
) -> str:
    """What changed since `key`'s latest materialization, for a run the automation requested: 'subject' (a new
    observation of the app), 'golden' (a test's hash), 'settings' (its stage's sections), 'upstream' (a dependency
    materialized since by another run), or 'settings' when nothing recorded differs (a code change, or a dependency
    this same run materialized for its own settings)."""
    record = instance.get_latest_materialization_event(key)
    if record is None or record.asset_materialization is None:
        return AUTOMATION
    old, since = record.asset_materialization.metadata, record.timestamp
    found = []
    if SUBJECT in deps:
        seen = instance.fetch_observations(SUBJECT, limit=1).records
        if seen and seen[0].timestamp > since:
            found.append("subject")
    if json_entry(old, TESTS) not in (None, json_entry(definition, TESTS)):
        found.append("golden")
    if json_entry(old, SETTINGS) not in (None, json_entry(definition, SETTINGS)):
        found.append("settings")
    if not found and any(
        (r := instance.get_latest_materialization_event(d)) is not None and r.timestamp > since and r.run_id != run_id
        for d in deps
        if d != SUBJECT
    ):
        found.append("upstream")
    return "+".join(found) or AUTOMATION

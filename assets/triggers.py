"""Why a run ran, from its tags: one word for the warehouse's eval_runs.trigger, the inputs_current causes and the UI."""

from typing import Mapping


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

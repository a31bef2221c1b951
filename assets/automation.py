"""Automation: settings changes and corpus changes re-materialize exactly what lies downstream, by themselves.

Dagster's `eager()` ignores code-version changes, and `code_version_changed()` is edge-triggered: if the run it
requested fails, the edge is gone and nothing retries while the UI still shows the asset as unsynced. ragpipe's
condition adds code-version changes to the triggers and re-arms on a failed execution, so a failed run does not
swallow the change: the next tick requests it again.
"""

import dagster as dg

AC = dg.AutomationCondition

_in_progress = AC.in_progress() | AC.any_deps_in_progress()
_handled = AC.newly_requested() | AC.newly_updated()
_trigger = (
    AC.missing()
    | AC.code_version_changed()
    | AC.any_deps_updated()
    | AC.execution_failed()
)

RAGPIPE_CONDITION: dg.AutomationCondition = (
    _trigger.since(_handled) & ~AC.any_deps_missing() & ~_in_progress
).with_label("ragpipe: missing, code version changed, upstream updated, or last run failed")


def automation_sensor() -> dg.AutomationConditionSensorDefinition:
    """Declared RUNNING so a fresh `dagster dev` evaluates the conditions without anyone switching it on."""
    return dg.AutomationConditionSensorDefinition(
        name="ragpipe_automation",
        target=dg.AssetSelection.all(),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=30,
        description="Re-materializes stale assets after a settings change, a corpus change or a failed run.",
    )

"""Automation: settings changes and corpus changes re-materialize exactly what lies downstream, by themselves.

Dagster's `eager()` ignores code-version changes; ragpipe's condition adds them to the triggers. Every trigger is an
edge (a code version that changed, an upstream that updated, an asset that became missing), so a run that fails is
not requested again tick after tick: failing steps are retried inside the run a bounded number of times with growing
delays (RETRY_POLICY on the evaluation assets; errors that will always recur, such as a broken golden set file, are
not retried at all), and after that nothing is requested until something the asset depends on changes (settings,
corpus, golden set file, code). `ragpipe status` and the run's page say why it failed; the nightly schedule
re-evaluates in any case.
"""

import dagster as dg

AC = dg.AutomationCondition

_in_progress = AC.in_progress() | AC.any_deps_in_progress()
_handled = AC.newly_requested() | AC.newly_updated()
_trigger = AC.missing().newly_true() | AC.code_version_changed() | AC.any_deps_updated()

RAGPIPE_CONDITION: dg.AutomationCondition = (
    _trigger.since(_handled) & ~AC.any_deps_missing() & ~_in_progress
).with_label("ragpipe: newly missing, code version changed, or upstream updated")

# A failing step is retried twice inside its run, after 10 s and 20 s (a busy warehouse, a flaky object store).
RETRY_POLICY = dg.RetryPolicy(max_retries=2, delay=10, backoff=dg.Backoff.EXPONENTIAL)


def automation_sensor() -> dg.AutomationConditionSensorDefinition:
    """Declared RUNNING so a fresh `dagster dev` evaluates the conditions without anyone switching it on."""
    return dg.AutomationConditionSensorDefinition(
        name="ragpipe_automation",
        target=dg.AssetSelection.all(),
        default_status=dg.DefaultSensorStatus.RUNNING,
        minimum_interval_seconds=30,
        run_tags={"ragpipe/trigger": "settings"},  # the Runs list says why, as the corpus sensor's runs do
        description="Re-materializes stale assets after a settings change, a corpus change or a golden set edit (a "
        "failed run is not requested again until something it depends on changes).",
    )

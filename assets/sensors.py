"""The corpus sensor and the nightly evaluation schedule."""

from typing import Any

import dagster as dg

from ragpipe.assets.resources import RagpipeResource
from ragpipe.assets.staleness import ON_DEMAND_GROUPS
from ragpipe.ingest import scan_corpus
from ragpipe.settings import Settings

EVAL_ASSETS = ["retrievals", "answers", "verdicts"]
# Runs launched by the daemon log to the `make ui` console: progress at INFO, not every Dagster event (those stay in
# the run's event log in the UI). Named jobs also give the runs a target in the UI's Runs list.
QUIET = {"loggers": {"console": {"config": {"log_level": "INFO"}}}}


def corpus_job() -> Any:
    return dg.define_asset_job(
        "corpus_change",
        selection=dg.AssetSelection.assets("corpus").downstream() - dg.AssetSelection.groups(*ON_DEMAND_GROUPS),
        config=QUIET,
        description="What a corpus change makes stale: the corpus and everything below it (less what runs on demand).",
    )


def nightly_job() -> Any:
    return dg.define_asset_job(
        "nightly_evaluation_job",
        selection=dg.AssetSelection.assets(*EVAL_ASSETS),
        config=QUIET,
        description="Retrievals, answers and verdicts again: a hosted LLM can drift.",
    )


def build_corpus_sensor(settings: Settings) -> dg.SensorDefinition:
    @dg.sensor(
        name="corpus_sensor",
        target=corpus_job(),
        minimum_interval_seconds=settings.automation.corpus_sensor_interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Watches the corpus directory by content hash (not mtime): one run per real change "
        "(add, edit, delete, rename); only what changed is re-parsed and re-embedded downstream.",
    )
    def corpus_sensor(context: dg.SensorEvaluationContext, ragpipe: RagpipeResource) -> dg.SensorResult:
        s = ragpipe.settings()
        scan = scan_corpus(s.corpus.dir, s.corpus.exclude)
        digest = scan.manifest_digest()
        if context.cursor == digest:
            return dg.SensorResult(skip_reason=f"corpus unchanged ({len(scan.files)} files)")
        if context.cursor is None:
            recorded = _ingested_manifest(context)
            if recorded is None or recorded == digest[:16]:
                # A fresh sensor: the automation sensor materializes a never-ingested corpus, and an ingested one
                # that has not changed needs nothing. Remember the state; only later changes are events.
                return dg.SensorResult(skip_reason="corpus state recorded", cursor=digest)
        # No run_key on purpose: a corpus that returns to an earlier state (a reverted edit) is a real change too.
        return dg.SensorResult(
            run_requests=[dg.RunRequest(tags={"ragpipe/trigger": "corpus", "ragpipe/corpus_manifest": digest[:16]})],
            cursor=digest,
        )

    return corpus_sensor


def _ingested_manifest(context: dg.SensorEvaluationContext) -> str | None:
    """The manifest digest (data version) of the latest `corpus` materialization, if any."""
    instance = context.instance
    record = instance.get_latest_materialization_event(dg.AssetKey("corpus")) if instance else None
    if record is None or record.asset_materialization is None:
        return None
    return (record.asset_materialization.tags or {}).get("dagster/data_version")


def build_nightly_schedule(settings: Settings) -> dg.ScheduleDefinition:
    return dg.ScheduleDefinition(
        name="nightly_evaluation",
        target=nightly_job(),
        cron_schedule=settings.automation.nightly_cron,
        execution_timezone=settings.automation.timezone,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        tags={"ragpipe/trigger": "scheduled"},
        description="Re-runs retrieval, answers and verdicts nightly even when nothing upstream changed, because a "
        "hosted LLM can drift.",
    )

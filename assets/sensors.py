"""The corpus sensor and the nightly evaluation schedule."""

import dagster as dg

from ragpipe.corpus import scan_corpus
from ragpipe.settings import Settings

from assets.resources import RagpipeResource

EVAL_ASSETS = ["retrievals", "answers", "verdicts"]


def build_corpus_sensor(settings: Settings) -> dg.SensorDefinition:
    @dg.sensor(
        name="corpus_sensor",
        target=dg.AssetSelection.assets("corpus").downstream(),
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
        if context.cursor is None and _already_ingested(context, digest):
            # First tick of a fresh sensor on a corpus that was already materialized: remember, don't rerun.
            return dg.SensorResult(skip_reason="corpus already ingested", cursor=digest)
        # No run_key on purpose: a corpus that returns to an earlier state (a reverted edit) is a real change too.
        return dg.SensorResult(
            run_requests=[dg.RunRequest(tags={"ragpipe/trigger": "corpus_sensor", "ragpipe/corpus_manifest": digest[:16]})],
            cursor=digest,
        )

    return corpus_sensor


def _already_ingested(context: dg.SensorEvaluationContext, digest: str) -> bool:
    """True when the latest `corpus` materialization recorded this manifest (its data version)."""
    instance = context.instance
    if instance is None:
        return False
    record = instance.get_latest_materialization_event(dg.AssetKey("corpus"))
    if record is None or record.asset_materialization is None:
        return False
    tags = record.asset_materialization.tags or {}
    return tags.get("dagster/data_version") == digest[:16]


def build_nightly_schedule(settings: Settings) -> dg.ScheduleDefinition:
    return dg.ScheduleDefinition(
        name="nightly_evaluation",
        target=dg.AssetSelection.assets(*EVAL_ASSETS),
        cron_schedule=settings.automation.nightly_cron,
        execution_timezone=settings.automation.timezone,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        tags={"ragpipe/trigger": "scheduled"},
        description="Re-runs retrieval, answers and verdicts nightly even when nothing upstream changed, because a "
        "hosted LLM can drift.",
    )

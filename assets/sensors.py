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
CORPUS_JOB = "corpus_change"
CORPUS_SELECTION = dg.AssetSelection.assets("corpus").downstream() - dg.AssetSelection.groups(*ON_DEMAND_GROUPS)


def job_assets(context: Any, selection: dg.AssetSelection) -> list[dg.AssetKey] | None:
    """The assets of a sensor's job, named on its run request. Dagster then records them as the run's selection; a
    run that names none can look to the automation like a run that updated an asset's inputs without it, and a corpus
    change was then evaluated twice (the job's run, then the automation's). None without definitions."""
    repo = getattr(context, "repository_def", None)
    return sorted(selection.resolve(repo.asset_graph)) if repo is not None else None


def waiting_run(context: Any, job_name: str) -> str | None:
    """The id of a run of `job_name` queued and not started yet, if any: it reads its inputs as they are when it
    starts, so a change seen meanwhile needs no run of its own (under load, changes then never pile up runs)."""
    instance = getattr(context, "instance", None)
    waiting = [dg.DagsterRunStatus.QUEUED, dg.DagsterRunStatus.NOT_STARTED]
    records = instance.get_run_records(dg.RunsFilter(job_name=job_name, statuses=waiting), limit=1) if instance else []
    return records[0].dagster_run.run_id if records else None


def corpus_job() -> Any:
    return dg.define_asset_job(
        CORPUS_JOB,
        selection=CORPUS_SELECTION,
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
        "(add, edit, delete, rename), and none while a corpus run waits to start (it reads the corpus as it is "
        "then); only what changed is re-parsed and re-embedded downstream.",
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
        tags = {"ragpipe/trigger": "corpus", "ragpipe/corpus_manifest": digest[:16]}
        if (waiting := waiting_run(context, CORPUS_JOB)) is not None:
            context.instance.add_run_tags(waiting, tags)  # the Runs list names the state it will read
            return dg.SensorResult(skip_reason=f"corpus run {waiting[:8]} waits to start; it reads this", cursor=digest)
        # No run_key on purpose: a corpus that returns to an earlier state (a reverted edit) is a real change too.
        request = dg.RunRequest(tags=tags, asset_selection=job_assets(context, CORPUS_SELECTION))
        return dg.SensorResult(run_requests=[request], cursor=digest)

    return corpus_sensor


def _ingested_manifest(context: dg.SensorEvaluationContext) -> str | None:
    """The manifest digest (data version) of the latest `corpus` materialization, if any."""
    instance = context.instance
    record = instance.get_latest_materialization_event(dg.AssetKey("corpus")) if instance else None
    if record is None or record.asset_materialization is None:
        return None
    return (record.asset_materialization.tags or {}).get("dagster/data_version")


def build_nightly_schedule(settings: Settings) -> dg.ScheduleDefinition:
    def nightly(context: dg.ScheduleEvaluationContext) -> dg.RunRequest:  # the assets named, as the sensors do
        return dg.RunRequest(
            tags={"ragpipe/trigger": "scheduled"}, asset_selection=[dg.AssetKey(a) for a in EVAL_ASSETS]
        )

    return dg.ScheduleDefinition(
        name="nightly_evaluation",
        target=nightly_job(),
        cron_schedule=settings.automation.nightly_cron,
        execution_timezone=settings.automation.timezone,
        execution_fn=nightly,
        default_status=dg.DefaultScheduleStatus.RUNNING,
        tags={"ragpipe/trigger": "scheduled"},
        description="Re-runs retrieval, answers and verdicts nightly even when nothing upstream changed, because a "
        "hosted LLM can drift.",
    )

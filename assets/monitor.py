"""Post-launch monitoring: the `production_traces` asset (the app's JSON Lines traces into the warehouse, with the
rates per day), the check that warns when a rate leaves its recent interval, and the sensor that runs both when new
traces land in [monitor].traces_dir. Never run by `ragpipe ci` or the automation: traces arrive when the app writes
them."""

import functools
import hashlib
import json
from pathlib import Path
from typing import Any

import dagster as dg

from ragpipe.assets.errors import door
from ragpipe.assets.niah import markdown_image
from ragpipe.assets.resources import RagpipeResource
from ragpipe.assets.sensors import QUIET, job_assets, waiting_run
from ragpipe.assets.tables import table_of_tests
from ragpipe.settings import Settings

GROUP = "monitor"
MONITOR_JOB = "monitor_job"
CHECK = "rates_within_recent_interval"
MONITOR_VERSION = "1"


def _version(settings: Settings) -> str:
    payload = {
        "monitor": settings.monitor.versioned(settings.root),
        "refusal_phrases": settings.answerer.refusal_phrases,
    }
    return f"v{MONITOR_VERSION}-{hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:10]}"


def build_monitor_assets(settings: Settings) -> tuple[dg.AssetsDefinition, dg.AssetChecksDefinition]:
    @dg.asset(
        name="production_traces",
        group_name=GROUP,
        kinds={"duckdb"},
        code_version=_version(settings),
        pool="duckdb",
        description="The app's production traces from [monitor].traces_dir (new lines only, each once, bad lines "
        "named), with the refusal, citation hit and correction rates per day and app version (views monitor_daily "
        "and monitor_trap_hits). Run by the traces sensor when files change.",
    )
    @door
    def production_traces(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        from ragpipe.monitor import DAILY_COLUMNS, daily_rows, days, ingest_traces, judge, rates_figure

        s = ragpipe.settings()
        with ragpipe.warehouse() as con:
            got = ingest_traces(s, con, log=context.log.info)
            series = days(con)
        judged = judge(series, s.monitor.window_days, s.monitor.min_traces)
        metadata: dict[str, Any] = {}
        png = rates_figure(series, judged, s.warehouse_dir / "monitor" / "rates.png")
        if png is not None:
            metadata["figure"] = dg.MetadataValue.md(markdown_image(str(png)))
        metadata.update(got.stats())
        # inline tables, in plain sight on the asset's page (a Markdown value hides behind "[Show Markdown]")
        metadata["rates_judged"] = table_of_tests(
            [(j.rate, j.status, j.line()) for j in judged], ("rate", "status", "reading"), where="the check"
        )
        metadata["daily"] = table_of_tests(daily_rows(series[-14:][::-1]), DAILY_COLUMNS, where="monitor_daily")
        if series:  # numbers of the latest day: the UI plots them across materializations
            for rate in ("refusal_rate", "citation_hit_rate", "correction_rate"):
                if series[-1][rate] is not None:
                    metadata[f"latest_{rate}"] = dg.MetadataValue.float(round(series[-1][rate], 4))
        if got.problems:
            metadata["bad_lines_named"] = dg.MetadataValue.md("\n".join(f"- `{p}`" for p in got.problems[:50]))
        if got.trap_note:
            metadata["trap_hits_note"] = got.trap_note
        return dg.MaterializeResult(metadata=metadata)

    @dg.asset_check(
        asset=production_traces,
        name=CHECK,
        blocking=False,
        description="Warns when the latest day's refusal, citation hit or correction rate leaves its recent interval "
        "([monitor].window_days before it): the intervals apart and outside the days' own range.",
    )
    @door
    def rates_within_recent_interval(ragpipe: RagpipeResource) -> dg.AssetCheckResult:
        from ragpipe.monitor import days, judge

        s = ragpipe.settings()
        with ragpipe.warehouse(read_only=True) as con:
            judged = judge(days(con), s.monitor.window_days, s.monitor.min_traces)
        out = [j for j in judged if j.status == "out"]
        return dg.AssetCheckResult(
            passed=not out,
            severity=dg.AssetCheckSeverity.WARN,
            description="; ".join(j.line() for j in out) or "every rate within its recent interval",
            metadata={j.rate: dg.MetadataValue.text(j.line()) for j in judged},
        )

    return production_traces, rates_within_recent_interval


@functools.cache
def monitor_job() -> Any:
    """One definition, shared by the traces sensor's target and the code location's jobs (`ragpipe monitor` runs
    under this name)."""
    return dg.define_asset_job(
        MONITOR_JOB,
        selection=dg.AssetSelection.groups(GROUP),
        config=QUIET,
        description="New production traces into the warehouse, and the rates judged.",
    )


def _listing(folder: Path, pattern: str) -> str:
    """A digest of the trace files' names, sizes and modification times: any write to them changes it."""
    files = sorted(
        (p.relative_to(folder).as_posix(), p.stat().st_size, p.stat().st_mtime_ns)
        for p in folder.glob(pattern)
        if p.is_file()
    )
    return hashlib.sha256(json.dumps(files).encode()).hexdigest()[:16] if files else ""


def build_traces_sensor(settings: Settings) -> dg.SensorDefinition:
    @dg.sensor(
        name="traces_sensor",
        target=monitor_job(),
        minimum_interval_seconds=settings.monitor.sensor_interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Watches [monitor].traces_dir: a new or grown traces file, or changed [monitor] settings, runs "
        "production_traces and its check (only new lines are read; the rates are judged again); none while a monitor "
        "run waits to start (it reads the new lines then).",
    )
    def traces_sensor(context: dg.SensorEvaluationContext, ragpipe: RagpipeResource) -> dg.SensorResult:
        s = ragpipe.settings()
        m = s.monitor
        if m.traces_dir is None:
            return dg.SensorResult(skip_reason="[monitor].traces_dir is not set")
        if not m.traces_dir.is_dir():
            return dg.SensorResult(skip_reason=f"[monitor].traces_dir {m.traces_dir} does not exist (yet)")
        listing = _listing(m.traces_dir, m.pattern)
        old_listing, _, old_version = (context.cursor or "").partition(":")
        cursor = f"{listing}:{_version(s)}"
        if not listing or cursor == context.cursor:
            return dg.SensorResult(skip_reason="no new traces, [monitor] unchanged", cursor=context.cursor)
        # new traces, or [monitor] changed (min_traces, window_days...): the rates are judged again either way
        trigger = "traces" if listing != old_listing or not old_version else "settings"
        if (waiting := waiting_run(context, MONITOR_JOB)) is not None:
            return dg.SensorResult(
                skip_reason=f"monitor run {waiting[:8]} waits to start; it reads these", cursor=cursor
            )
        assets = job_assets(context, dg.AssetSelection.groups(GROUP))
        request = dg.RunRequest(run_key=cursor, tags={"ragpipe/trigger": trigger}, asset_selection=assets)
        return dg.SensorResult(run_requests=[request], cursor=cursor)

    return traces_sensor

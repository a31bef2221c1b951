"""The team's app as a Dagster source: its identity (embedder, model, version; else a fingerprint of what it retrieves)
is the `subject` source asset's data version, so a deploy marks retrievals, answers and verdicts stale and the
automation re-evaluates the golden set by itself. Only when [subject].kind is "http" or "python"."""

from __future__ import annotations

from typing import Any

import dagster as dg

from ragpipe import evaluate
from ragpipe.assets.errors import door
from ragpipe.assets.resources import RagpipeResource
from ragpipe.settings import Settings

KEY = "subject"
DATA_VERSION_TAG = "dagster/data_version"


def _metadata(seen: Any) -> dict[str, Any]:
    return {"how": seen.how, **{k: seen.identity.get(k, "") for k in ("embedder", "model", "version")}}


def build_subject(settings: Settings) -> tuple[list[Any], list[dg.SensorDefinition]]:
    """([the `subject` source asset], [the sensor that observes it every observe_interval_s]); nothing for the
    pipeline subject."""
    if settings.subject.kind == "pipeline":
        return [], []

    @dg.observable_source_asset(
        name=KEY,
        group_name="evaluate",
        description=f"The app under test ({settings.subject.kind}): its identity is this source's data version; a "
        "deploy that changes it makes the evaluation stale. Observed by subject_sensor.",
    )
    @door
    def subject(ragpipe: RagpipeResource) -> dg.ObserveResult:
        seen = evaluate.observe_subject(ragpipe.settings())
        return dg.ObserveResult(data_version=dg.DataVersion(seen.version), metadata=_metadata(seen))

    @dg.sensor(
        name="subject_sensor",
        minimum_interval_seconds=settings.subject.observe_interval_s,
        default_status=dg.DefaultSensorStatus.RUNNING,
        description="Reads the app's identity; records an observation of `subject` when it changed (a deploy), "
        "which the automation turns into one re-evaluation.",
    )
    def subject_sensor(context: dg.SensorEvaluationContext, ragpipe: RagpipeResource) -> dg.SensorResult:
        try:
            seen = evaluate.observe_subject(ragpipe.settings())
        except Exception as exc:  # an app that is down is no deploy: say so, observe nothing
            return dg.SensorResult(skip_reason=f"cannot read the app's identity: {type(exc).__name__}: {exc}")
        if context.cursor == seen.version:
            return dg.SensorResult(skip_reason=f"app unchanged ({seen.how} {seen.version})")
        event = dg.AssetObservation(KEY, metadata=_metadata(seen), tags={DATA_VERSION_TAG: seen.version})
        return dg.SensorResult(asset_events=[event], cursor=seen.version)

    return [subject], [subject_sensor]

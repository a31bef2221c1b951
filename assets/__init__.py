"""The Dagster layer of ragpipe: thin asset, check, sensor and schedule definitions over the `ragpipe` library."""

from __future__ import annotations

import dagster as dg

from ragpipe.assets.automation import automation_sensor
from ragpipe.assets.cluster import build_executor
from ragpipe.assets.compare import compare_job
from ragpipe.assets.embed import build_embeddings
from ragpipe.assets.evaluate import build_eval_assets
from ragpipe.assets.ingest import build_ingest_assets
from ragpipe.assets.inputs_current import build_inputs_current_checks, checked_keys, inputs_current_sensor
from ragpipe.assets.monitor import build_monitor_assets, build_traces_sensor, monitor_job
from ragpipe.assets.niah import build_niah_assets
from ragpipe.assets.resources import RagpipeResource, StagingIOManager
from ragpipe.assets.sensors import build_corpus_sensor, build_nightly_schedule
from ragpipe.assets.staleness import ON_DEMAND_GROUPS
from ragpipe.assets.subject import build_subject
from ragpipe.assets.suggest import build_suggestions
from ragpipe.settings import is_remote_uri, load_settings, settings_path

# Dagster's console logger, at INFO unless a run's config asks for more: `make ui` shows progress, not every event
# (the DEBUG events stay in each run's event log in the UI).
CONSOLE = dg.LoggerDefinition(
    dg.colored_console_logger.logger_fn,
    config_schema={
        "log_level": dg.Field(str, is_required=False, default_value="INFO"),
        "name": dg.Field(str, is_required=False, default_value="dagster"),
    },
    description="The console logger at INFO by default.",
)


def build_definitions(path: str | None = None) -> dg.Definitions:
    """Assemble the code location from a settings file (explicit, $RAGPIPE_SETTINGS, or ./ragpipe.toml).

    Reading the settings file here is cheap and deliberate: code versions derive from it. No database is
    opened and no model is loaded until a run asks for them.
    """
    source = settings_path(path).resolve()
    settings = load_settings(source)
    corpus, documents, chunks = build_ingest_assets(settings)
    embeddings = build_embeddings(settings, chunks)
    subject, subject_sensors = build_subject(settings)
    traces, traces_check = build_monitor_assets(settings)
    all_assets = [
        corpus,
        documents,
        chunks,
        embeddings,
        *subject,
        *build_eval_assets(settings),
        *build_niah_assets(settings),
        build_suggestions(settings),
        traces,
    ]
    resources: dict[str, object] = {"ragpipe": RagpipeResource(settings_path=str(source))}
    if is_remote_uri(settings.staging_uri):  # steps may run where this machine's disk is not
        resources["io_manager"] = StagingIOManager(settings_path=str(source))
    graph = dg.Definitions(assets=all_assets, resources=resources).resolve_asset_graph()
    return dg.Definitions(
        assets=all_assets,
        asset_checks=[build_inputs_current_checks(checked_keys(graph)), traces_check],
        jobs=[
            dg.define_asset_job(
                "ragpipe_job",
                selection=dg.AssetSelection.all() - dg.AssetSelection.groups(*ON_DEMAND_GROUPS),
                description="The whole graph (less the on-demand groups: niah, authoring, monitor).",
            ),
            dg.define_asset_job(
                "niah_job",
                selection=dg.AssetSelection.groups("niah"),
                description="Needle in a haystack: haystacks, trials, report (on demand).",
            ),
            monitor_job(),
            compare_job,
        ],
        sensors=[
            automation_sensor(),
            build_corpus_sensor(settings),
            inputs_current_sensor(),
            build_traces_sensor(settings),
            *subject_sensors,
        ],
        schedules=[build_nightly_schedule(settings)],
        resources=resources,
        loggers={"console": CONSOLE},
        executor=build_executor(settings),
    )

"""Stages as data: a `Stage` row says what an evaluation asset is (its name, what it reads, the stage whose settings
and implementation version it, the library function that runs it, its checks, what it records), and `stage_asset`
applies ragpipe's policy once over every row: the group, the "duckdb" pool, the automation condition, the retry
policy, the code version, the recorded inputs, the error door and the failure recorded in eval_failures.

A new evaluation stage is one row (assets/evaluate.py's EVAL_STAGES) and one library function."""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import dagster as dg

from ragpipe import evaluate
from ragpipe.assets.automation import RAGPIPE_CONDITION, RETRY_POLICY
from ragpipe.assets.errors import door
from ragpipe.assets.inputs import recorded_inputs
from ragpipe.assets.resources import RagpipeResource
from ragpipe.assets.triggers import AUTOMATION, READ_BY, automation_trigger, trigger_of
from ragpipe.settings import Settings
from ragpipe.versions import code_version

GROUP = "evaluate"


@dataclass(frozen=True)
class Stage:
    name: str  # the asset key
    upstream: Callable[[Settings], list[str]]  # the assets it reads
    version: str  # the stage (ragpipe.versions) whose settings sections and implementation version it
    run: str | Callable[..., dict[str, Any]]  # the library function, or its name in ragpipe.evaluate (looked up per
    # run): (settings, con, run_id, log=[, trigger=]) -> stats
    result: Callable[["StageRun"], dg.MaterializeResult]  # the stats as Dagster records them
    description: Callable[[Settings], str]
    kinds: tuple[str, ...] = ("duckdb",)
    checks: dict[str, str] = field(default_factory=dict)  # check name -> what it checks
    takes_trigger: bool = False  # `run` records why the run ran (eval_runs.trigger)
    records_tests: bool = False  # its recorded inputs include a hash per test (the golden file)
    version_suffix: Callable[[Settings], str] | None = None  # more of the code version (the golden file's hash)


@dataclass(frozen=True)
class StageRun:
    """What a row's `result` reads: the step's context, the settings, the open warehouse, the library's stats."""

    context: dg.AssetExecutionContext
    settings: Settings
    con: Any
    stats: dict[str, Any]
    severity: dg.AssetCheckSeverity
    stage: Stage

    def recorded(self) -> dict[str, Any]:
        """What the stage is computed from, as its materialization records it."""
        return recorded(self.settings, self.stage)


def recorded(s: Settings, stage: Stage) -> dict[str, Any]:
    return recorded_inputs(s, stage.version, tests=stage.records_tests)


@contextmanager
def failure_recorded(context: dg.AssetExecutionContext, con: Any) -> Iterator[None]:
    """A failing evaluation stage leaves its error in eval_failures before Dagster sees it: `latest_verdicts` and
    `evaluation_status` then say the verdicts are older than this attempt, and why."""
    try:
        yield
    except Exception as exc:
        evaluate.record_failure(con, context.run.run_id, context.asset_key.to_user_string(), exc)
        raise  # an InputError leaves through the door (ragpipe.assets.errors): never retried


def _trigger(context: dg.AssetExecutionContext, s: Settings, stage: Stage) -> str:
    """The run's trigger; for the automation's runs, what changed since this asset's last materialization (the
    first step to find it tags the run with it, so the Runs list and the later steps read the same word)."""
    run = context.instance.get_run_by_id(context.run.run_id)
    tags = (run or context.run).tags
    trigger = trigger_of(tags)
    if trigger != AUTOMATION or READ_BY in tags:
        return trigger
    deps = [dg.AssetKey(d) for d in stage.upstream(s)]
    found = automation_trigger(context.instance, context.asset_key, recorded(s, stage), deps, context.run.run_id)
    # the Runs list says it too, and the later steps of this run keep it
    context.instance.add_run_tags(context.run.run_id, {"ragpipe/trigger": found, READ_BY: stage.name})
    return found


def stage_asset(stage: Stage, settings: Settings, severity: dg.AssetCheckSeverity) -> dg.AssetsDefinition:
    version = code_version(settings, stage.version)
    if stage.version_suffix is not None:
        version = f"{version}-{stage.version_suffix(settings)}"

    @dg.asset(
        name=stage.name,
        deps=stage.upstream(settings),
        group_name=GROUP,
        kinds=set(stage.kinds),
        code_version=version,
        metadata=recorded(settings, stage),
        pool="duckdb",
        automation_condition=RAGPIPE_CONDITION,
        retry_policy=RETRY_POLICY,
        description=stage.description(settings),
        check_specs=[dg.AssetCheckSpec(name, asset=stage.name, description=d) for name, d in stage.checks.items()],
    )
    @door
    def evaluation_stage(context: dg.AssetExecutionContext, ragpipe: RagpipeResource) -> dg.MaterializeResult:
        s = ragpipe.settings()
        trigger = _trigger(context, s, stage)  # every stage reads it: the first of a run names what changed
        extra = {"trigger": trigger} if stage.takes_trigger else {}
        with ragpipe.warehouse() as con:
            with failure_recorded(context, con):
                run = getattr(evaluate, stage.run) if isinstance(stage.run, str) else stage.run
                stats = run(s, con, context.run.run_id, log=context.log.info, **extra)
            return stage.result(StageRun(context, s, con, stats, severity, stage))

    return evaluation_stage

"""The Dagster layer's contracts: every step passes the error door, the private Dagster API the adapter holds still
has the shape ragpipe relies on, and a snapshot of the code location's names shows any rename as a diff."""

from __future__ import annotations

import logging
import os
from pathlib import Path

import dagster as dg
import pytest
from conftest import ROOT

from ragpipe.assets.errors import INPUT_ERROR, door, is_input_failure, passes_door
from ragpipe.cli.common import failure_code, failure_lines
from ragpipe.core import EXIT_BLOCKED, EXIT_INPUT, InputError, RagpipeError
from ragpipe.golden import GoldenSetError
from ragpipe.monitor import MonitorError
from ragpipe.settings import SettingsError
from ragpipe.warehouse import ExportError, ObjectStoreError

SNAPSHOT = ROOT / "tests" / "snapshots" / "definitions.txt"
UPDATE = "RAGPIPE_UPDATE_SNAPSHOTS"  # set to 1 to rewrite the snapshot after a deliberate rename


def test_input_errors_share_one_base() -> None:
    for cls in (GoldenSetError, SettingsError, ObjectStoreError, ExportError, MonitorError):
        assert issubclass(cls, InputError) and issubclass(cls, RagpipeError), cls


class _Unreadable(InputError):
    """An input error no list anywhere names: the door classifies it by its type."""


def _run(exc: Exception) -> tuple[dg.ExecuteInProcessResult, list[int]]:
    calls: list[int] = []

    @dg.asset(retry_policy=dg.RetryPolicy(max_retries=2))
    @door
    def broken() -> None:
        calls.append(1)
        raise exc

    result = dg.materialize([broken], instance=dg.DagsterInstance.ephemeral(), raise_on_error=False)
    return result, calls


@pytest.mark.slow
@pytest.mark.dagster
def test_an_input_error_crosses_the_door_once_and_exits_2() -> None:
    result, calls = _run(_Unreadable("golden.jsonl line 3: field 'question' is missing"))
    assert not result.success and calls == [1]  # never retried: the same input fails the same way
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert is_input_failure(failure.step_failure_data)
    assert failure.step_failure_data.user_failure_data.metadata[INPUT_ERROR].value == "_Unreadable"
    lines = failure_lines(result)
    assert lines == ["broken failed: _Unreadable: golden.jsonl line 3: field 'question' is missing"]
    assert failure_code(lines) == EXIT_INPUT


@pytest.mark.slow
@pytest.mark.dagster
def test_any_other_error_is_retried_and_blocks() -> None:
    result, calls = _run(RuntimeError("the endpoint hung up"))
    assert not result.success and calls == [1, 1, 1]  # the retry policy's two retries
    failure = next(e for e in result.all_events if e.is_step_failure)
    assert not is_input_failure(failure.step_failure_data)
    assert failure_code(failure_lines(result)) == EXIT_BLOCKED


def test_the_door_keeps_generators_generators() -> None:
    @door
    def checks() -> object:
        yield 1
        raise SettingsError("ragpipe.toml: [retriever].k must be a positive integer")

    gen = checks()
    assert next(gen) == 1
    with pytest.raises(dg.Failure) as info:
        next(gen)
    assert "SettingsError: ragpipe.toml: [retriever].k" in info.value.description


def _defs() -> dg.Definitions:
    from ragpipe.assets import build_definitions

    return build_definitions(str(ROOT / "ragpipe.toml"))


@pytest.mark.slow
@pytest.mark.dagster
@pytest.mark.parametrize("shards", [1, 2])
def test_every_step_of_the_code_location_passes_the_door(tmp_path: Path, shards: int) -> None:
    """The bundled settings, and the same with documents and embeddings fanned out into shard steps."""
    import tomllib

    from conftest import write_settings

    sections = tomllib.loads((ROOT / "ragpipe.toml").read_text(encoding="utf-8"))
    sections.setdefault("scale", {}).update(parse_shards=shards, embed_shards=shards)
    from ragpipe.assets import build_definitions

    repo = build_definitions(str(write_settings(tmp_path / "ragpipe.toml", sections))).get_repository_def()
    ops = {op.name: op for job in repo.get_all_jobs() for op in job.all_node_defs if isinstance(op, dg.OpDefinition)}
    checks = [c for c in (repo.asset_checks_defs_by_key or {}).values()]
    without = sorted(name for name, op in ops.items() if not passes_door(op.compute_fn.decorated_fn))
    assert ops and without == [], f"decorate these compute functions with @door (ragpipe.assets.errors): {without}"
    assert checks  # the checks are ops of the jobs above too


def _names(defs: dg.Definitions) -> str:
    repo = defs.get_repository_def()
    graph = defs.resolve_asset_graph()
    lines = []
    for key in sorted(graph.get_all_asset_keys(), key=lambda k: k.to_user_string()):
        node = graph.get(key)
        lines.append(f"asset {key.to_user_string()} group={node.group_name}")
    for key in sorted(graph.asset_check_keys, key=lambda k: k.to_user_string()):
        lines.append(f"check {key.to_user_string()}")
    lines += [f"job {j.name}" for j in sorted(repo.get_all_jobs(), key=lambda j: j.name)]
    lines += [f"sensor {s.name}" for s in sorted(repo.sensor_defs, key=lambda s: s.name)]
    lines += [f"schedule {s.name} {s.cron_schedule}" for s in sorted(repo.schedule_defs, key=lambda s: s.name)]
    return "\n".join(lines) + "\n"


@pytest.mark.slow
@pytest.mark.dagster
def test_the_code_location_names_match_the_snapshot() -> None:
    """Every asset, check, job, sensor and schedule of the bundled settings: a rename shows as a diff here (users'
    SQL, sensors, run history and CI scripts hold these names). After a deliberate rename: RAGPIPE_UPDATE_SNAPSHOTS=1."""
    got = _names(_defs())
    if os.environ.get(UPDATE) == "1" or not SNAPSHOT.exists():
        SNAPSHOT.write_text(got, encoding="utf-8")
    assert got == SNAPSHOT.read_text(encoding="utf-8")


def test_dagster_internals_keep_the_shape_ragpipe_relies_on() -> None:
    """The private names the adapter imports: if a Dagster release moves or changes one, this fails by name."""
    from ragpipe.assets import dagster_internals as di

    assert {"MISSING", "STALE", "FRESH"} <= {s.name for s in di.StaleStatus}
    assert {"CODE", "DATA"} <= {c.name for c in di.StaleCauseCategory}
    assert {"key", "category", "reason", "dependency"} <= set(di.StaleCause.__annotations__) | set(
        getattr(di.StaleCause, "_fields", ())
    )
    assert di.retries_disabled() == di.RetryMode.DISABLED


@pytest.mark.slow
@pytest.mark.dagster
def test_dagster_internals_resolve_staleness_on_a_real_graph(tmp_path: Path) -> None:
    from ragpipe.assets import dagster_internals as di

    @dg.asset(code_version="1")
    def upstream() -> int:
        return 1

    defs = dg.Definitions(assets=[upstream])
    graph = defs.resolve_asset_graph()
    assert isinstance(graph, di.BaseAssetGraph)
    instance = dg.DagsterInstance.ephemeral()
    resolver = di.stale_status_resolver(instance, graph)
    assert resolver.get_status(upstream.key) == di.StaleStatus.MISSING
    dg.materialize([upstream], instance=instance)
    assert di.stale_status_resolver(instance, graph).get_status(upstream.key) == di.StaleStatus.FRESH
    changed = dg.Definitions(assets=[dg.asset(code_version="2", name="upstream")(lambda: 1)]).resolve_asset_graph()
    resolver = di.stale_status_resolver(instance, changed)
    assert resolver.get_status(upstream.key) == di.StaleStatus.STALE
    [cause] = resolver.get_stale_causes(upstream.key)
    assert cause.category == di.StaleCauseCategory.CODE


@pytest.mark.slow
@pytest.mark.dagster
def test_a_new_evaluation_stage_is_one_row(tmp_path: Path) -> None:
    """One Stage row and one library function: the asset gets the group, pool, retry policy, automation condition,
    code version, recorded inputs, door and failure recording every evaluation stage has, and runs for real."""
    from conftest import make_project

    from ragpipe.assets.automation import RAGPIPE_CONDITION, RETRY_POLICY
    from ragpipe.assets.evaluate import EVAL_STAGES, build_eval_assets
    from ragpipe.assets.resources import RagpipeResource
    from ragpipe.assets.stages import Stage
    from ragpipe.versions import code_version

    def count_tables(settings: object, con: object, run_id: str, log: object) -> dict[str, int]:
        return {"tables": con.execute("SELECT count(*) FROM duckdb_tables()").fetchone()[0]}

    row = Stage(
        name="warehouse_census",
        upstream=lambda s: ["answers"],
        version="answerer",
        run=count_tables,
        result=lambda step: dg.MaterializeResult(metadata=step.stats),
        description=lambda s: "How many tables the warehouse holds.",
    )
    p = make_project(tmp_path / "p")
    settings = p.settings()
    built = build_eval_assets(settings, (*EVAL_STAGES, row))
    assert [a.key.to_user_string() for a in built][-1] == "warehouse_census"
    new = built[-1]
    spec = next(iter(new.specs))
    assert {d.asset_key.to_user_string() for d in spec.deps} == {"answers"}
    assert spec.group_name == "evaluate" and spec.code_version == code_version(settings, "answerer")
    assert spec.automation_condition == RAGPIPE_CONDITION and new.op.retry_policy == RETRY_POLICY
    assert new.op.pool == "duckdb" and passes_door(new.op.compute_fn.decorated_fn)
    resources = {"ragpipe": RagpipeResource(settings_path=str(p.settings_file))}
    result = dg.materialize([new], resources=resources, instance=p.instance, selection=["warehouse_census"])
    assert result.success
    assert p.metadata(result, "warehouse_census")["tables"] > 0


@pytest.mark.slow
@pytest.mark.dagster
def test_a_materialize_all_of_the_whole_graph_does_not_sweep_the_on_demand_assets_along(tmp_path: Path) -> None:
    """The UI's Materialize all selects every asset: the on-demand ones (NIAH trials, golden suggestions) log why they
    did not run and materialize nothing; asked for alone, they run."""
    from conftest import make_project

    from ragpipe.assets.runner import materialize

    p = make_project(tmp_path / "proj")
    result = materialize(str(p.settings_file), ["corpus", "niah_haystacks", "golden_suggestions"], p.instance)
    assert result.success
    assert {e.asset_key.to_user_string() for e in result.get_asset_materialization_events()} == {"corpus"}
    warnings = [e.user_message for e in p.instance.all_logs(result.run_id) if e.level == logging.WARNING]
    assert any("niah_haystacks not run: it runs on demand only" in m and "(corpus)" in m for m in warnings), warnings
    assert any("golden_suggestions not run" in m and "ragpipe golden suggest" in m for m in warnings), warnings
    alone = materialize(str(p.settings_file), ["niah_haystacks"], p.instance)
    assert alone.success and [e.asset_key.to_user_string() for e in alone.get_asset_materialization_events()] == [
        "niah_haystacks"
    ]

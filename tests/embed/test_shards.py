"""Sharded embedding: static hash partitions, any merge order gives the unsharded table, killed runs resume,
and Dagster's multiprocess executor runs the shard steps in separate processes."""

from __future__ import annotations

import shutil
from collections import Counter
from pathlib import Path
from typing import Any

import dagster as dg
import pytest
from conftest import Project, make_project
from vectorkit import _same, _table

from ragpipe.embed import embed_chunks, embed_shard, merge_embed_shards, plan_embed_shards
from ragpipe.ingest import shard_of
from ragpipe.warehouse import connect

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]


def test_shard_of_is_static_in_range_and_spreads() -> None:
    ids = [f"reports/doc-{i}.md" for i in range(600)]
    first = [shard_of(d, 4) for d in ids]
    assert first == [shard_of(d, 4) for d in ids]  # a pure function of the document id
    counts = Counter(first)
    assert set(counts) == {0, 1, 2, 3} and min(counts.values()) > 100  # roughly even
    assert {shard_of(d, 1) for d in ids} == {0}


@pytest.fixture(scope="module")
def chunked(tmp_path_factory: pytest.TempPathFactory) -> Project:
    """The bundled example parsed and chunked (not embedded), with the static embedder (fast, real)."""
    p = make_project(tmp_path_factory.mktemp("shards") / "proj", embedder="minilm-static")
    p.materialize(["corpus", "documents", "chunks"])
    shutil.rmtree(p.settings().warehouse_dir / "prefetch", ignore_errors=True)  # what was embedded while parsing
    return p


def _copy(p: Project, dest: Path) -> Project:
    shutil.copytree(p.root, dest)
    q = Project(dest, dg.DagsterInstance.ephemeral())
    q.settings_file.write_text(p.settings_file.read_text())
    return q


def test_any_merge_order_gives_the_unsharded_table_and_a_killed_run_resumes(
    chunked: Project, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ref = _copy(chunked, tmp_path / "ref")
    s = ref.settings()
    with connect(s.duckdb_path) as con:
        embed_chunks(s, con, "run-ref")
    expected = _table(s)
    assert len(expected) > 100

    def no_model(*_: Any, **__: Any) -> None:
        raise AssertionError("a sync with nothing new to embed loaded the model")

    with monkeypatch.context() as m:  # nothing new: the embedder is never loaded, nor is the plan's
        m.setattr("ragpipe.embed.embedders.load_embedder", no_model)
        with connect(s.duckdb_path) as con:
            assert embed_chunks(s, con, "run-noop")["embedded"] == 0
            assert plan_embed_shards(s, con, 2)["texts"] == 0

    for n, order in ((3, [2, 0, 1]), (3, [1, 2, 0]), (2, [1, 0])):
        q = _copy(chunked, tmp_path / f"q{n}{''.join(map(str, order))}")
        s = q.settings()
        with connect(s.duckdb_path) as con:
            plan = plan_embed_shards(s, con, n)
        assert sum(plan["shard_sizes"]) == plan["texts"] and all(plan["shard_sizes"])
        for i in order:
            assert embed_shard(s, Path(plan["stage"]), i, n)["embedded"] == plan["shard_sizes"][i]
        with connect(s.duckdb_path) as con:
            stats = merge_embed_shards(s, con, "run-merge", Path(plan["stage"]), n, order=order)
        assert (stats["embedded"], stats["precomputed"]) == (0, plan["texts"])  # every new text came from a shard
        assert not Path(plan["stage"]).exists()
        _same(_table(s), expected)

    # killed after shard 0 of 3: the next run's plan is the same, shard 0 is not embedded again
    q = _copy(chunked, tmp_path / "killed")
    s = q.settings()
    with connect(s.duckdb_path) as con:
        plan = plan_embed_shards(s, con, 3)
    embed_shard(s, Path(plan["stage"]), 0, 3)
    with connect(s.duckdb_path) as con:
        again = plan_embed_shards(s, con, 3)
    assert again["stage"] == plan["stage"]
    done = [embed_shard(s, Path(again["stage"]), i, 3) for i in range(3)]
    assert [d["resumed"] for d in done] == [True, False, False]
    with connect(s.duckdb_path) as con:
        merge_embed_shards(s, con, "run-resumed", Path(again["stage"]), 3)
    _same(_table(s), expected)


def test_multiprocess_executor_runs_shards_in_separate_processes(chunked: Project, tmp_path: Path) -> None:
    from ragpipe.assets.runner import materialize

    q = _copy(chunked, tmp_path / "mp")
    with q.settings_file.open("a") as fh:
        fh.write("\n[scale]\nembed_shards = 2\n")
    (tmp_path / "dagster_home").mkdir()
    instance = dg.DagsterInstance.local_temp(str(tmp_path / "dagster_home"))
    result = materialize(str(q.settings_file), ["embeddings"], instance, multiprocess=True)
    assert result.success, [str(e) for e in result.all_events if e.is_failure]
    pids = {}
    for ev in result.all_events:
        if ev.event_type_value == "STEP_OUTPUT" and ev.step_key.startswith("embeddings.embed_shard_"):
            pids[ev.step_key] = ev.event_specific_data.metadata["pid"].value
    assert len(pids) == 2 and len(set(pids.values())) == 2, pids
    materializations = instance.fetch_materializations(dg.AssetKey("embeddings"), limit=1).records
    md = materializations[0].asset_materialization.metadata
    assert md["shards"].value == 2 and md["embedded"].value == 0 and md["precomputed"].value > 100
    assert q.sql("SELECT count(*) FROM embeddings")[0][0] == md["vectors"].value

"""`ragpipe compare`: a candidate evaluated beside the current configuration predicts exactly what adopting it does,
and leaves the current state as it was (warehouse rows, latest run, golden file, Dagster asset history)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import dagster as dg
import pytest
from conftest import Project, make_project

from ragpipe.assets import build_definitions
from ragpipe.assets.runner import materialize_stale, run_compare
from ragpipe.cli import main
from ragpipe.reports import Comparison, candidate_settings
from ragpipe.settings import SettingsError
from ragpipe.warehouse import connect

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]

MAIN_TABLES = (
    "corpus_files",
    "documents",
    "chunks",
    "embeddings",
    "golden_tests",
    "stamps",
    "eval_runs",
    "retrievals",
    "answers",
    "verdicts",
    "eval_failures",
    "stage_runs",
)


def _state(p: Project) -> dict[str, object]:
    with connect(p.settings().duckdb_path, read_only=True) as con:
        rows = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in MAIN_TABLES}
        latest = con.execute("SELECT eval_run_id FROM latest_eval_run").fetchone()[0]
    graph = dg.AssetSelection.all().resolve(build_definitions(str(p.settings_file)).resolve_asset_graph())
    mats = {
        k.to_user_string(): ((e.run_id, e.timestamp) if (e := p.instance.get_latest_materialization_event(k)) else None)
        for k in graph
    }
    return {
        "rows": rows,
        "latest": latest,
        "golden": hashlib.sha256(p.golden.read_bytes()).hexdigest(),
        "materializations": mats,
        "scratch": sorted((p.root / "warehouse" / "compare").glob("*")),
    }


def test_compare_predicts_an_embedder_swap_and_changes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # Embedder A (minilm-static) at k=3 on the bundled example: some negatives take the trap (fail).
    p = make_project(tmp_path / "proj", embedder="minilm-static", k=3)
    _, result = materialize_stale(str(p.settings_file), p.instance)
    assert result is not None and result.success
    before = _state(p)

    comparison = run_compare(str(p.settings_file), ["embedder.name=minilm"], "", p.instance)
    assert isinstance(comparison, Comparison)
    after = _state(p)
    assert after == before  # rows, latest run, golden file, asset history, no scratch left behind
    with connect(p.settings().duckdb_path, read_only=True) as con:
        stored = con.execute(
            "SELECT flips, blocking, changed FROM comparisons WHERE comparison_id = ?", [comparison.comparison_id]
        ).fetchone()
        per_test = con.execute(
            "SELECT count(*) FROM comparison_verdicts WHERE comparison_id = ?", [comparison.comparison_id]
        ).fetchone()[0]
    assert stored[0] == len(comparison.flips) and stored[1] == len(comparison.blocking)
    assert '"embedder.name": "minilm-static -> minilm"' in stored[2]
    assert per_test == len(comparison.rows)
    assert comparison.reused["documents"].startswith("copied") and "chunks" in comparison.reused  # nothing re-parsed
    # the comparison is a run of its own job in Dagster
    runs = p.instance.get_runs(filters=dg.RunsFilter(job_name="ragpipe_compare"))
    assert len(runs) == 1 and runs[0].tags["ragpipe/comparison_id"] == comparison.comparison_id
    assert runs[0].tags["ragpipe/trigger"] == "cli"  # the Runs list says why it ran

    # The motivating case: a negative that took the trap under A whose trap B does not retrieve is predicted as
    # fail -> did_not_run, never fail -> pass.
    trapped = {r.question_id for r in comparison.rows if r.kind == "negative" and r.transition == "fail->did_not_run"}
    assert trapped, [(r.question_id, r.transition) for r in comparison.flips]
    assert all(r.candidate.anchor_rank is None for r in comparison.rows if r.question_id in trapped)
    assert not [
        r
        for r in comparison.rows
        if r.kind == "negative" and r.transition == "fail->pass" and r.candidate.anchor_rank is None
    ]

    # Adopting the candidate gives exactly the predicted verdicts and ranks, and the flips name the embedder.
    p.configure(embedder="minilm", k=3)
    _, result = materialize_stale(str(p.settings_file), p.instance)
    assert result is not None and result.success
    with connect(p.settings().duckdb_path, read_only=True) as con:
        actual = {
            q: (v, r)
            for q, v, r in con.execute("SELECT question_id, verdict, anchor_rank FROM latest_verdicts").fetchall()
        }
        flips = {
            q: (o, n, c)
            for q, o, n, c in con.execute(
                "SELECT question_id, old_verdict, new_verdict, cause FROM verdict_changes "
                "WHERE eval_run_id = (SELECT eval_run_id FROM latest_eval_run)"
            ).fetchall()
        }
    assert actual == {r.question_id: (r.candidate.verdict, r.candidate.anchor_rank) for r in comparison.rows}
    for q in trapped:
        old, new, cause = flips[q]
        assert (
            (old, new) == ("fail", "did_not_run")
            and cause.startswith("embedder minilm-static-")
            and " -> minilm-" in cause
        ), flips[q]

    # The CLI: the same table, a Markdown file for a pull request, exit 1 on a blocking flip (back to A: tests that
    # ran under B stop running)
    monkeypatch.setenv("DAGSTER_HOME", str(p.root))
    md = tmp_path / "compare.md"
    code = main(
        ["--settings", str(p.settings_file), "compare", "--set", 'embedder.name="minilm-static"', "--markdown", str(md)]
    )
    out = capsys.readouterr().out
    assert "embedder.name: minilm -> minilm-static" in out and "FLIPS (" in out
    assert code == 1 and "CANDIDATE: BLOCKED" in out  # back to A: tests that ran under B stop running
    assert md.read_text().startswith("## ragpipe compare: BLOCKED")


def test_candidate_settings_errors_name_the_setting(tmp_path: Path) -> None:
    p = make_project(tmp_path / "proj", with_golden=True)
    current = p.settings()
    assert candidate_settings(current, ["retriever.k=8", "retriever.mode=vector"]).retriever.k == 8
    with pytest.raises(SettingsError, match=r"--set 'k=8': expected SECTION.KEY=VALUE"):
        candidate_settings(current, ["k=8"])
    with pytest.raises(
        SettingsError, match=r"compare changes only chunker, embedder, retriever, answerer, judge, subject; \[corpus\]"
    ):
        candidate_settings(current, ["corpus.dir=elsewhere"])
    with pytest.raises(SettingsError, match=r"--subject-url needs \[subject\].kind = 'http'"):
        from ragpipe.cli.compare import subject_overrides

        subject_overrides(current, "http://staging:8765/ask")
    with pytest.raises(SettingsError, match=r"\[retriever\].k must be at least 1"):
        candidate_settings(current, ["retriever.k=0"])
    with pytest.raises(SettingsError, match=r"\[compare\].block has unknown transitions \['pass-fail'\]"):
        (p.root / "c.toml").write_text(p.settings_file.read_text() + '\n[compare]\nblock = ["pass-fail"]\n')
        candidate_settings(current, [], p.root / "c.toml")


def test_compare_before_any_run_says_to_run_ci_first(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    p = make_project(tmp_path / "proj")
    assert main(["--settings", str(p.settings_file), "compare", "--set", "retriever.k=8"]) == 2
    err = capsys.readouterr().err
    assert "no warehouse yet at" in err and "run `ragpipe ci` first" in err and "Traceback" not in err

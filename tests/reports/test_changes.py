"""What changed since the last run, and which change did it: the verdict_changes view, the CI summary's CHANGED SINCE
LAST RUN section and `ragpipe history`, over real runs of the graph after each kind of change."""

from __future__ import annotations

import json
import re
from pathlib import Path
from xml.etree import ElementTree as ET

import duckdb
import pytest
from conftest import Project, make_project
from truthkit import assert_materializations_true, assert_summary_true

from ragpipe.assets.runner import materialize_stale
from ragpipe.cli import main
from ragpipe.reports import load_summary, render_junit, render_markdown, render_text
from ragpipe.warehouse import connect, migrate

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]


def _run(p: Project) -> str:
    """Bring the graph up to date (what `ragpipe ci` does) and return the new eval run's id."""
    _, result = materialize_stale(str(p.settings_file), p.instance)
    assert result is not None and result.success
    with connect(p.settings().duckdb_path, read_only=True) as con:
        assert_summary_true(con)  # every figure the summary prints, recomputed from the tables
        assert_materializations_true(con, result)  # and those of the materializations and checks
        return con.execute("SELECT eval_run_id FROM latest_eval_run").fetchone()[0]


def _timeline(p: Project, run: str) -> dict[str, tuple]:
    """question_id -> (old verdict, new verdict, old rank, new rank, cause) in `run`."""
    rows = p.sql(
        "SELECT question_id, old_verdict, new_verdict, old_anchor_rank, new_anchor_rank, cause "
        "FROM verdict_timeline WHERE eval_run_id = ?",
        [run],
    )
    return {r[0]: r[1:] for r in rows}


def _changes(p: Project, run: str) -> dict[str, tuple]:
    """question_id -> (old/new verdict, old/new rank, old/new unverified, cause) of the tests that changed in `run`."""
    rows = p.sql(
        "SELECT question_id, old_verdict, new_verdict, old_anchor_rank, new_anchor_rank, "
        "old_unverified, new_unverified, cause FROM verdict_changes WHERE eval_run_id = ?",
        [run],
    )
    return {r[0]: r[1:] for r in rows}


def _anchor_doc(t: dict) -> str | None:
    return t.get("trap_source") or t.get("evidence_source")


def test_each_kind_of_change_is_named_as_the_cause(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    p = make_project(tmp_path / "proj")
    tests = [json.loads(x) for x in p.golden.read_text().splitlines() if x.strip()]

    first = _run(p)
    assert {c[-1] for c in _timeline(p, first).values()} == {"first run"}
    assert _changes(p, first) == {}

    # 1. one golden line edited: only that test's cause names it; nothing else moved
    edited = next(t for t in tests if t["kind"] == "positive")
    lines = p.golden.read_text().splitlines()
    i = next(n for n, x in enumerate(lines) if json.loads(x)["question_id"] == edited["question_id"])
    lines[i] = json.dumps({**edited, "question": edited["question"].rstrip("?") + ", according to the documents?"})
    p.golden.write_text("\n".join(lines) + "\n")
    run = _run(p)
    timeline = _timeline(p, run)
    assert timeline[edited["question_id"]][-1] == "golden line edited"
    assert {c[-1] for q, c in timeline.items() if q != edited["question_id"]} == {
        "nothing upstream changed: the answerer drifted"
    }
    assert set(_changes(p, run)) <= {edited["question_id"]}

    # 2. a document the golden set quotes is deleted: its tests flip to did_not_run because their anchor is gone
    gone = "reports/q3-2023.md"
    anchored = {t["question_id"] for t in tests if _anchor_doc(t) == gone}
    assert anchored
    (p.corpus / gone).unlink()
    run = _run(p)
    changes = _changes(p, run)
    for q in anchored:
        old, new, _, new_rank, *_, cause = changes[q]
        assert new == "did_not_run" and new_rank is None and cause == "anchor document deleted", changes[q]
    assert all(c[-1] == "other documents changed" for q, c in changes.items() if q not in anchored), changes
    assert {c[-1] for q, c in _timeline(p, run).items() if q not in anchored} == {"other documents changed"}

    # 3. a chunker change, 4. an embedder change, 5. an answerer-only change: each run names exactly its change
    p.configure(max_characters=500)
    run = _run(p)
    chunker = {c[-1] for c in _timeline(p, run).values()}
    assert len(chunker) == 1 and chunker.pop().startswith("chunker by_title-"), chunker
    assert _changes(p, run)  # re-chunking moves anchors in the ranking

    p.configure(max_characters=500, embedder="minilm-static")
    run = _run(p)
    timeline = _timeline(p, run)
    assert all(c[-1].startswith("embedder minilm-") and " -> minilm-static-" in c[-1] for c in timeline.values())
    with connect(p.settings().duckdb_path, read_only=True) as con:
        verified_before = {
            r[0]
            for r in con.execute(
                "SELECT question_id FROM verdict_timeline WHERE eval_run_id = ? AND NOT old_unverified", [run]
            ).fetchall()
        }
    changes = _changes(p, run)
    assert verified_before and all(changes[q][5] for q in verified_before)  # validated under minilm: now unverified

    text = p.settings_file.read_text().replace('kind = "extractive"', 'kind = "extractive"\nmin_support = 0.95')
    p.settings_file.write_text(text)
    run = _run(p)
    answerer = {c[-1] for c in _timeline(p, run).values()}
    assert answerer == {"answerer min_support 0.5 -> 0.95"}, answerer
    changes = _changes(p, run)
    assert changes and all(c[0] != c[1] for c in changes.values())  # a stricter answerer turns some answers around

    # The same rows in every report: text, Markdown, JUnit properties
    with connect(p.settings().duckdb_path, read_only=True) as con:
        summary = load_summary(con)
    assert summary is not None and len(summary.changes) == len(changes)
    text = render_text(summary, ("fail",))
    assert "CHANGED SINCE LAST RUN" in text and "cause: answerer min_support 0.5 -> 0.95" in text
    assert "| cause |" in render_markdown(summary, ("fail",))
    cases = {c.get("name"): c for c in ET.fromstring(render_junit(summary)).iter("testcase")}
    q, (old, new, *_) = next(iter(changes.items()))
    props = {pr.get("name"): pr.get("value") for pr in cases[q].iter("property")}
    assert props["previous_verdict"] == old and props["change_cause"] == "answerer min_support 0.5 -> 0.95"

    # `ragpipe history`: the test's whole story, oldest first, each change with its cause
    q = sorted(anchored)[0]
    monkeypatch.setenv("DAGSTER_HOME", str(p.root))
    assert main(["--settings", str(p.settings_file), "history", q]) == 0
    out = capsys.readouterr().out
    assert out.index("first run") < out.index("cause: anchor document deleted") < out.index("cause: embedder minilm-")
    assert len([x for x in out.splitlines() if x[:4].isdigit()]) == 6  # six judged runs
    assert main(["--settings", str(p.settings_file), "history", "neg_0"]) == 2
    assert re.search(r"no verdict recorded for test 'neg_0'; closest ids: neg_\d\d, ", capsys.readouterr().err)


def test_the_same_inputs_and_another_verdict_is_answerer_drift(tmp_path: Path) -> None:
    """The view's rule on hand-written rows: identical inputs, another verdict -> the answerer drifted; a run on
    another golden set file is never compared with this one."""
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    migrate(con)
    for run, t, path in (
        ("r1", "2026-01-01", "g.jsonl"),
        ("r2", "2026-01-02", "other.jsonl"),
        ("r3", "2026-01-03", "g.jsonl"),
    ):
        con.execute(
            "INSERT INTO eval_runs (eval_run_id, started_at, chunker_tag, embedder_tag, retriever, answerer, "
            "answerer_label, golden_sha256, n_tests, verdict_run_id, golden_path, corpus_digest) "
            "VALUES (?, ?, 'c', 'e', '{\"k\": 5}', '{}', 'openai', 'sha', 1, ?, ?, 'd')",
            [run, t, run, path],
        )
        verdict = "fail" if run == "r1" else "pass"
        con.execute(
            "INSERT INTO verdicts (eval_run_id, question_id, kind, verdict, reason, anchor_retrieved, refused, "
            "took_trap, unverified, judged_at, test_sha, source_sha, anchor_rank) "
            "VALUES (?, 'neg_01', 'negative', ?, '', true, false, false, false, now(), 't', 's', 2)",
            [run, verdict],
        )
    rows = con.execute(
        "SELECT eval_run_id, prev_eval_run_id, old_verdict, new_verdict, cause FROM verdict_changes"
    ).fetchall()
    assert rows == [("r3", "r1", "fail", "pass", "nothing upstream changed: the answerer drifted")]
    con.execute("UPDATE eval_runs SET retriever = '{\"k\": 8}' WHERE eval_run_id = 'r3'")
    assert con.execute("SELECT cause FROM verdict_changes").fetchone()[0] == "retriever k 5 -> 8"


def test_history_survives_a_moved_checkout(tmp_path: Path) -> None:
    """A CI clone in a new directory, or a repository moved: the flips and their causes are compared with the run
    before, also when that run recorded the golden set by its absolute path (as older versions did)."""
    import shutil

    import dagster as dg

    p = make_project(tmp_path / "proj")
    _run(p)
    with connect(p.settings().duckdb_path) as con:  # the run as an older version recorded it
        con.execute("UPDATE eval_runs SET golden_path = ?", [str((p.root / "golden.jsonl").resolve())])
    shutil.copytree(p.root, tmp_path / "moved")
    moved = Project(tmp_path / "moved", dg.DagsterInstance.ephemeral())
    tests = [json.loads(x) for x in moved.golden.read_text().splitlines() if x.strip()]
    gone = "reports/q3-2023.md"
    anchored = {t["question_id"] for t in tests if _anchor_doc(t) == gone}
    (moved.corpus / gone).unlink()
    run = _run(moved)
    changes = _changes(moved, run)
    assert anchored and all(changes[q][1] == "did_not_run" for q in anchored), changes
    assert all(changes[q][-1] == "anchor document deleted" for q in anchored), changes
    assert {r[0] for r in moved.sql("SELECT DISTINCT golden_path FROM eval_runs")} == {"golden.jsonl"}


def test_runs_against_the_app_name_the_switch_and_the_identity_fields_once(tmp_path: Path) -> None:
    """Hand-written rows: a run against the app after one of ragpipe's own pipeline names the switch (not the corpus
    digest or the embedder, which the two runs do not share); a deploy names each identity field once, by name."""
    con = duckdb.connect(str(tmp_path / "w.duckdb"))
    migrate(con)
    runs = (
        ("r1", None, "minilm-bcfe46d6", '{"k": 5}', "d"),
        (
            "r2",
            "http http://127.0.0.1:1/ask",
            "minilm",
            '{"subject": "http http://127.0.0.1:1/ask", "version": "1", "embedder": "minilm"}',
            "",
        ),
        (
            "r3",
            "http http://127.0.0.1:2/ask",
            "minilm-128",
            '{"subject": "http http://127.0.0.1:2/ask", "version": "2", "embedder": "minilm-128"}',
            "",
        ),
        (
            "r4",
            "http http://127.0.0.1:2/ask",
            "minilm-128",
            '{"subject": "http http://127.0.0.1:2/ask", "version": "2", "embedder": "minilm-128"}',
            "",
        ),
    )
    for i, (run, subject, embedder, retriever, digest) in enumerate(runs):
        con.execute(
            "INSERT INTO eval_runs (eval_run_id, started_at, chunker_tag, embedder_tag, retriever, answerer, "
            "answerer_label, golden_sha256, n_tests, verdict_run_id, golden_path, corpus_digest, subject) "
            "VALUES (?, ?, 'c', ?, ?, '{}', 'extractive', 'sha', 1, ?, 'g.jsonl', ?, ?)",
            [run, f"2026-01-0{i + 1}", embedder, retriever, run, digest, subject],
        )
        con.execute(
            "INSERT INTO verdicts (eval_run_id, question_id, kind, verdict, reason, anchor_retrieved, refused, "
            "took_trap, unverified, judged_at, test_sha, source_sha, anchor_rank) "
            "VALUES (?, 'neg_01', 'negative', ?, '', true, false, false, false, now(), 't', 's', 2)",
            [run, "pass" if i % 2 else "fail"],
        )
    causes = dict(con.execute("SELECT eval_run_id, cause FROM verdict_changes").fetchall())
    assert causes == {
        "r2": "subject ragpipe's own pipeline -> http http://127.0.0.1:1/ask",
        "r3": "app http http://127.0.0.1:1/ask -> http http://127.0.0.1:2/ask, embedder minilm -> minilm-128, "
        "version 1 -> 2",
        "r4": "nothing recorded changed (the app's identity, the golden line, the answerer): the app's replies drifted",
    }

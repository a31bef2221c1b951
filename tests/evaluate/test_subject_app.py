"""The team's own app as the subject under test: a LangChain RAG app (examples/app/rag_app.py, written without
ragpipe) served by a real uvicorn process, judged through the real Dagster graph by `ragpipe ci`; the same app as a
Python function; the app restarted with another embedder. No part of the app is faked."""

from __future__ import annotations

import json
import os
import re
import socket
import sys
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from conftest import EXAMPLES, Project, make_project, project_settings, write_settings
from faultkit import Proc
from truthkit import assert_summary_true

from ragpipe.assets.runner import materialize
from ragpipe.cli import main

pytestmark = [pytest.mark.slow, pytest.mark.dagster, pytest.mark.model]
APP_DIR = EXAMPLES / "app"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class App:
    """The app in its own uvicorn process, on loopback."""

    def __init__(self, embedder: str, version: str):
        self.port = _free_port()
        env = {**os.environ, "APP_EMBEDDER": embedder, "APP_VERSION": version, "APP_CORPUS": str(EXAMPLES / "corpus")}
        argv = [sys.executable, "-m", "uvicorn", "--app-dir", str(APP_DIR), "rag_app:http_app"]
        self.proc = Proc([*argv, "--host", "127.0.0.1", "--port", str(self.port)], env=env)
        self.proc.wait_for(r"Uvicorn running", timeout=120)
        self.url = f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        self.proc.stop()


def _configure(p: Project, subject: dict[str, Any]) -> None:
    write_settings(p.settings_file, {**project_settings(), "subject": subject})


def _ci(p: Project, capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    code = main(["--settings", str(p.settings_file), "ci"])
    out = capsys.readouterr().out
    from ragpipe.warehouse import connect

    with connect(p.settings().duckdb_path, read_only=True) as con:
        assert_summary_true(con)  # every figure the summary prints, recomputed from the tables
    return code, out


def _verdicts(p: Project) -> dict[str, tuple[str, str]]:
    rows = p.sql(
        "SELECT question_id, verdict, reason FROM verdicts WHERE eval_run_id = "
        "(SELECT eval_run_id FROM eval_runs WHERE verdict_run_id IS NOT NULL ORDER BY started_at DESC LIMIT 1)"
    )
    return {q: (v, r) for q, v, r in rows}


@pytest.fixture
def proj(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Project:
    monkeypatch.setenv("DAGSTER_HOME", str(tmp_path))
    return make_project(tmp_path / "proj")


def test_the_app_over_http_judged_by_ragpipe_ci_then_restarted_with_another_embedder(
    proj: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    app = App("minilm", "1")
    try:
        ident = json.loads(urllib.request.urlopen(f"{app.url}/identity", timeout=10).read())
        assert ident == {"embedder": "minilm", "model": "extractive", "version": "1"}
        _configure(
            proj, {"kind": "http", "url": f"{app.url}/ask", "body": '{"question": "{question}", "id": "{question_id}"}'}
        )
        code, out = _ci(proj, capsys)
        assert code in (0, 1), out
        first = _verdicts(proj)
        over = r"retrieval of anchors over the (\d+) of (\d+) tests with an anchor quote, (\d+) of them not among"
        assert (m := re.search(over, out)) and m[1] == m[2] and int(m[3]) > 0, out  # the subset the figure is over
        unverified = proj.sql("SELECT bool_and(unverified), mode(test_embedder_tag) FROM verdicts")[0]
        # every test was validated under ragpipe's own embedder tag: under the app's "minilm" all are unverified,
        # and the summary says how to map the app's name for the same model
        assert unverified[0] is True and f"[subject.embedder_tags] minilm = {unverified[1]!r}" in out, out
        body = '{"question": "{question}", "id": "{question_id}"}'
        mapped = {"kind": "http", "url": f"{app.url}/ask", "body": body, "embedder_tags": {"minilm": unverified[1]}}
        _configure(proj, mapped)
        code, out = _ci(proj, capsys)
        assert code in (0, 1) and "app reports its embedder" not in out, out
        # the tests carrying the mapped tag are verified; only those validated under no embedder stay unverified
        left = proj.sql(
            "SELECT count(*) FILTER (WHERE unverified), count(*) FILTER (WHERE test_embedder_tag IS NULL) "
            "FROM latest_verdicts"
        )[0]
        assert left[0] == left[1] < len(first), left
        assert {q: v for q, (v, _) in _verdicts(proj).items()} == {q: v for q, (v, _) in first.items()}
    finally:
        app.stop()
    golden = [json.loads(line) for line in (EXAMPLES / "golden.jsonl").read_text().splitlines() if line.strip()]
    assert set(first) == {t["question_id"] for t in golden}
    run = proj.sql("SELECT subject, embedder_tag, hit_at_k FROM eval_runs ORDER BY started_at LIMIT 1")[0]
    assert run[0] == f"http {app.url}/ask" and run[1] == "minilm"
    # the app indexes no PDF: a test anchored in one did not run, and says why; the others ran
    pdf = [
        t["question_id"] for t in golden if (t.get("trap_source") or t.get("evidence_source") or "").endswith(".pdf")
    ]
    assert pdf and all(first[q][0] == "did_not_run" and "contexts the app returned" in first[q][1] for q in pdf)
    assert 0 < run[2] < 1  # hit@k counts the anchors the app did not return (the PDF tests) as misses
    assert not any(first[q][1].startswith(("trap trap", "evidence evidence")) for q in pdf)
    ran = [q for q, (v, _) in first.items() if v in ("pass", "fail", "needs_review")]
    assert len(ran) >= len(golden) // 2, first
    assert any(v == "pass" for v, _ in first.values())
    # the app's own contexts are what the verdicts were grounded in
    stored = proj.sql("SELECT count(DISTINCT question_id), count(*) FROM subject_contexts")[0]
    assert stored[0] == len(golden) and stored[1] >= len(golden)

    app = App("minilm-128", "2")  # a deploy: the same app restarted with another embedder
    try:
        _configure(proj, {"kind": "http", "url": f"{app.url}/ask"})
        code, out = _ci(proj, capsys)
        assert code in (0, 1), out
        second = _verdicts(proj)
    finally:
        app.stop()
    run = proj.sql("SELECT embedder_tag FROM eval_runs ORDER BY started_at DESC LIMIT 1")[0]
    assert run[0] == "minilm-128"
    assert set(second) == set(first)


def test_the_app_as_a_python_function_gives_the_http_verdicts(
    proj: Project, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.syspath_prepend(str(APP_DIR))
    monkeypatch.setenv("APP_CORPUS", str(EXAMPLES / "corpus"))
    _configure(proj, {"kind": "python", "target": "rag_app:ask"})
    code, out = _ci(proj, capsys)
    assert code in (0, 1), out
    by_function = _verdicts(proj)
    app = App("minilm", "1")
    try:
        _configure(proj, {"kind": "http", "url": f"{app.url}/ask"})
        assert _ci(proj, capsys)[0] in (0, 1)
    finally:
        app.stop()
    assert {q: v for q, (v, _) in _verdicts(proj).items()} == {q: v for q, (v, _) in by_function.items()}


def test_an_app_that_cannot_be_reached_gives_errors_never_passes(
    proj: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    _configure(
        proj, {"kind": "http", "url": f"http://127.0.0.1:{_free_port()}/ask", "max_retries": 1, "timeout_s": 2.0}
    )
    code, out = _ci(proj, capsys)
    assert code == 1
    verdicts = _verdicts(proj)
    assert verdicts and {v for v, _ in verdicts.values()} == {"error"}
    assert all("cannot reach" in r for _, r in verdicts.values())


def _tick(p: Project, cursor: Any) -> tuple[set[str], Any]:
    import dagster as dg

    from ragpipe.assets import build_definitions

    result = dg.evaluate_automation_conditions(
        defs=build_definitions(str(p.settings_file)), instance=p.instance, cursor=cursor
    )
    return {k.to_user_string() for k, v in result._requested_partitions_by_asset_key.items() if v}, result.cursor


def _skipped(result: Any) -> str:
    return result.skip_reason.skip_message if result.skip_reason else ""


def _observe(p: Project, cursor: str | None) -> Any:
    """One tick of subject_sensor; its observation recorded in the instance as the daemon would."""
    import dagster as dg

    from ragpipe.assets import build_definitions
    from ragpipe.assets.resources import RagpipeResource

    sensor = build_definitions(str(p.settings_file)).get_sensor_def("subject_sensor")
    ctx = dg.build_sensor_context(
        cursor=cursor, instance=p.instance, resources={"ragpipe": RagpipeResource(settings_path=str(p.settings_file))}
    )
    result = sensor(ctx)
    for event in result.asset_events:
        p.instance.report_runless_asset_event(event)
    return result


def test_a_deploy_of_the_app_is_predicted_by_compare_then_seen_by_the_subject_source_and_re_evaluated(
    proj: Project, capsys: pytest.CaptureFixture[str]
) -> None:
    app = App("minilm", "1")
    try:
        subject = {"kind": "http", "url": f"{app.url}/ask", "identity_url": f"{app.url}/identity"}
        _configure(proj, subject)
        proj.materialize()  # the whole graph observes the app too: the identity its verdicts were computed under
        requested, cursor = _tick(proj, None)
        assert requested == set()
        first = _observe(proj, None)  # the sensor's first tick: the same identity, so no re-evaluation
        (event,) = first.asset_events
        assert event.metadata["embedder"].value == "minilm" and event.metadata["how"].value == "identity"
        requested, cursor = _tick(proj, cursor)
        assert requested == set()
        unchanged = _observe(proj, first.cursor)
        assert not unchanged.asset_events and "unchanged" in _skipped(unchanged)
        requested, cursor = _tick(proj, cursor)
        assert requested == set()  # the same app: nothing to re-evaluate
        staging = App("minilm-128", "2")  # the next deploy, staged beside the current one
        try:
            code = main(["--settings", str(proj.settings_file), "compare", "--subject-url", f"{staging.url}/ask"])
            out = capsys.readouterr().out
        finally:
            staging.stop()
        assert code in (0, 1) and "subject.url" in out, out
        predicted = dict(proj.sql("SELECT question_id, candidate_verdict FROM comparison_verdicts"))
    finally:
        app.stop()
    down = _observe(proj, first.cursor)  # an app that is down is no deploy
    assert not down.asset_events and "cannot read the app's identity" in _skipped(down)
    app = App("minilm-128", "2")  # the deploy: another embedder, another version, on another port
    try:
        _configure(proj, {**subject, "url": f"{app.url}/ask", "identity_url": f"{app.url}/identity"})
        deployed = _observe(proj, first.cursor)
        (event,) = deployed.asset_events
        assert event.metadata["embedder"].value == "minilm-128" and deployed.cursor != first.cursor
        requested, cursor = _tick(proj, cursor)
        assert "retrievals" in requested
        requested, cursor = _tick(proj, cursor)
        assert requested == set()  # one re-evaluation per deploy
        # the run the automation requests (tagged as its sensor tags every run) names the deploy as its trigger
        result = materialize(
            str(proj.settings_file),
            ["retrievals", "answers", "verdicts"],
            proj.instance,
            {"ragpipe/trigger": "settings"},
        )
        assert result.success
    finally:
        app.stop()
    assert {q: v for q, (v, _) in _verdicts(proj).items()} == predicted  # compare said what the deploy would do
    # a new observation of the app, and [subject].url moved to the new port: both are named
    assert proj.sql("SELECT trigger FROM eval_runs ORDER BY started_at DESC LIMIT 1")[0][0] == "subject+settings"
    assert proj.instance.get_run_by_id(result.run_id).tags["ragpipe/trigger"] == "subject+settings"  # Runs list
    causes = {c for (c,) in proj.sql("SELECT DISTINCT cause FROM verdict_changes")}
    assert causes and all("embedder minilm -> minilm-128, version 1 -> 2" in c for c in causes), causes
    assert not any(c.count("embedder") > 1 or "retriever" in c or "documents" in c for c in causes), causes

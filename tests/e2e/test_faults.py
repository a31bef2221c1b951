"""Faults, for real: SIGKILL in the middle of embedding and of answering, two `ragpipe ci` at once on one project, and
an OpenAI-compatible endpoint that dies part-way or answers 429 — then the invariants a crash must never break.

Every scenario starts from a copy of one evaluated project (tests/faultkit.py: the bundled example, the repository's
dagster.yaml, one real `ragpipe ci`). Processes are killed with SIGKILL (the whole process group: the run and its
parser workers); the endpoint is a real HTTP server process (tests/openai_server.py) that is itself SIGKILLed.
"""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import Project
from faultkit import OpenAIServer, copy_project, driver, evaluated_base, python_env, ragpipe_cli, run_driver

from ragpipe.embed import store, table_name

pytestmark = [pytest.mark.slow, pytest.mark.dagster]

RAW_LOCK_ERRORS = (
    "Could not set lock",
    "Conflicting lock",
    "IOException",
    "IO Error",
    "database is locked",
    "Traceback",
)


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return evaluated_base(tmp_path_factory)


def embedder_tag(p: Project) -> str:
    tags = [r[0] for r in p.sql("SELECT DISTINCT embedder_tag FROM embeddings")]
    assert len(tags) == 1, tags
    return tags[0]


def lance_rows(p: Project, tag: str) -> list[dict]:
    table = store.open_store(p.settings()).open_table(table_name(tag))
    return table.to_arrow().select(["chunk_id", "content_hash", "vector"]).to_pylist()


def check_ingest_invariants(p: Project, tag: str) -> dict[str, int]:
    """No duplicate chunk, exactly one vector (LanceDB) and one mirror row (DuckDB) per current chunk, nothing else."""
    chunker = p.settings().chunker_tag
    assert p.sql("SELECT chunker_tag, chunk_id FROM chunks GROUP BY 1, 2 HAVING count(*) > 1") == []
    current = {r[0] for r in p.sql("SELECT chunk_id FROM chunks WHERE chunker_tag = ?", [chunker])}
    vectors = [r["chunk_id"] for r in lance_rows(p, tag)]
    assert len(vectors) == len(set(vectors)), "a chunk with two vectors"
    assert set(vectors) == current, (len(set(vectors) - current), len(current - set(vectors)))
    mirror = p.sql("SELECT chunk_id, chunker_tag FROM embeddings WHERE embedder_tag = ?", [tag])
    assert sorted(r[0] for r in mirror) == sorted(current)
    assert {r[1] for r in mirror} == {chunker}
    return {"chunks": len(current), "vectors": len(vectors), "mirror": len(mirror)}


def check_eval_invariants(p: Project) -> None:
    for table in ("answers", "verdicts"):
        assert p.sql(f"SELECT eval_run_id, question_id FROM {table} GROUP BY 1, 2 HAVING count(*) > 1") == [], table
    orphans = p.sql(
        "SELECT v.eval_run_id, v.question_id FROM verdicts v WHERE NOT EXISTS (SELECT 1 FROM retrievals r "
        "WHERE r.eval_run_id = v.eval_run_id AND r.question_id = v.question_id) OR NOT EXISTS (SELECT 1 FROM answers a "
        "WHERE a.eval_run_id = v.eval_run_id AND a.question_id = v.question_id)"
    )
    assert orphans == [], f"verdicts without their retrievals or answers: {orphans[:5]}"
    partial = p.sql(
        "SELECT r.eval_run_id, r.n_tests, count(v.question_id) FROM eval_runs r LEFT JOIN verdicts v USING (eval_run_id) "
        "WHERE r.verdict_run_id IS NOT NULL GROUP BY 1, 2 HAVING count(v.question_id) <> r.n_tests"
    )
    assert partial == [], f"judged eval runs with a partial set of verdicts: {partial}"


def latest_verdicts(p: Project) -> dict[str, tuple]:
    return {r[0]: r[1:] for r in p.sql("SELECT question_id, verdict, reason FROM latest_verdicts")}


def mark_questions(p: Project, marker: dict[str, str] | str) -> list[str]:
    """Append a tests/openai_server.py marker to questions (the server reads markers in the prompt)."""
    out, ids = [], []
    for line in p.golden.read_text().splitlines():
        if line.strip():
            test = json.loads(line)
            ids.append(test["question_id"])
            extra = marker if isinstance(marker, str) else marker.get(test["question_id"], "")
            test["question"] = f"{test['question']} {extra}".rstrip()
            line = json.dumps(test)
        out.append(line)
    p.golden.write_text("\n".join(out) + "\n")
    return ids


def wait_until(predicate, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def test_sigkill_in_the_middle_of_embedding(base: Path, tmp_path: Path) -> None:
    killed, reference = copy_project(base, tmp_path / "killed"), copy_project(base, tmp_path / "reference")
    tag = embedder_tag(killed)
    old_chunks = {r[0] for r in killed.sql("SELECT chunk_id FROM chunks")}
    for p in (killed, reference):  # a new chunker: new chunks to embed, and the old chunker's vectors become stale
        p.configure(max_characters=500, new_after=400)
    ref = driver(reference.settings_file, ["chunks", "embeddings"], "reference")  # uninterrupted, alongside

    # 1. SIGKILLed the instant the encoder's progress line shows (all new texts encoded): it lands before, in or
    #    after the LanceDB add / stale delete / index, or the DuckDB mirror, wherever the process happens to be
    run = driver(killed.settings_file, ["chunks", "embeddings"], "kill-1")
    run.wait_for(r"^embed \[", 600)
    assert run.sigkill() == -9
    assert "STAGE-DONE embeddings" not in run.output

    # 2. paused after LanceDB holds exactly the new chunks, before its FTS index and the DuckDB mirror are rebuilt
    run = driver(killed.settings_file, ["embeddings"], "kill-2", pause=r"^vectors for ")
    run.wait_for(r"^PAUSED$", 600)
    assert run.sigkill() == -9
    current = {
        r[0] for r in killed.sql("SELECT chunk_id FROM chunks WHERE chunker_tag = ?", [killed.settings().chunker_tag])
    }
    assert {r["chunk_id"] for r in lance_rows(killed, tag)} == current
    mirrored = {r[0] for r in killed.sql("SELECT chunk_id FROM embeddings WHERE embedder_tag = ?", [tag])}
    # the mirror is all old (LanceDB and DuckDB disagree after the crash) or, had kill 1 landed after it, all new
    assert mirrored in (old_chunks, current)

    out = run_driver(killed.settings_file, ["chunks", "embeddings"], "complete", timeout=600)
    assert "0 embedded" in out  # the vectors written before the kills are reused, not recomputed
    code, ref_out = ref.finish(600)
    assert code == 0 and "ALL-DONE" in ref_out, ref_out[-3000:]

    counts = check_ingest_invariants(killed, tag)
    assert counts == check_ingest_invariants(reference, tag)
    assert counts["chunks"] > len(old_chunks)
    a = {r["chunk_id"]: r for r in lance_rows(killed, tag)}
    b = {r["chunk_id"]: r for r in lance_rows(reference, tag)}
    assert a.keys() == b.keys()
    for cid in a:
        assert a[cid]["content_hash"] == b[cid]["content_hash"]
        assert np.allclose(a[cid]["vector"], b[cid]["vector"], atol=1e-4)


def test_sigkill_while_answering_then_the_next_ci_completes(base: Path, tmp_path: Path) -> None:
    p = copy_project(base, tmp_path / "proj")
    judged_before = p.sql("SELECT eval_run_id FROM latest_eval_run")[0][0]
    ids = mark_questions(p, "[[slowbody]]")  # every answer takes --slow-s: the kill lands mid-stage
    with OpenAIServer(slow_s=0.25) as server:
        p.configure(k=4, answerer="openai", base_url=server.base_url)  # retrievals, answers and verdicts are stale
        env = python_env(RAGPIPE_TEST_KEY="test-key")
        ci = ragpipe_cli(p.root, "ci", env=env)
        ci.wait_for(r"retrieved top-4", 600)
        wait_until(lambda: len(server.requests()) >= 6, 120, "answers in flight")
        assert ci.p.poll() is None
        assert ci.sigkill() == -9

        check_eval_invariants(p)
        latest = p.sql("SELECT eval_run_id, verdict_run_id FROM eval_runs ORDER BY started_at DESC LIMIT 1")[0]
        assert latest[0] != judged_before and latest[1] is None  # retrieved, never judged
        assert p.sql("SELECT count(*) FROM verdicts WHERE eval_run_id = ?", [latest[0]]) == [(0,)]
        assert p.sql("SELECT count(*) FROM answers WHERE eval_run_id = ?", [latest[0]]) == [(0,)]
        assert (
            p.sql("SELECT eval_run_id FROM latest_eval_run")[0][0] == judged_before
        )  # reports still the last complete

        code, out = ragpipe_cli(p.root, "ci", env=env).finish(600)
    assert code in (0, 1) and "GATE:" in out, out[-4000:]
    assert not any(e in out for e in RAW_LOCK_ERRORS), out[-4000:]
    check_eval_invariants(p)
    run = p.sql("SELECT eval_run_id, k, n_tests FROM latest_eval_run")[0]
    assert run[1] == 4 and run[2] == len(ids)
    assert set(latest_verdicts(p)) == set(ids)
    assert p.sql("SELECT count(*) FROM answers WHERE eval_run_id = ? AND error IS NULL", [run[0]]) == [(len(ids),)]


def test_two_ci_processes_at_once(base: Path, tmp_path: Path) -> None:
    """Both finish with the right verdicts and no raw lock error. Without run history both materialize the whole
    graph; without dagster.yaml's "duckdb" pool (conftest's projects have none) nothing serializes their steps but
    the warehouse's own lock, which ragpipe.warehouse.connect waits for."""
    import dagster as dg

    p = copy_project(base, tmp_path / "proj")
    expected = latest_verdicts(p)
    shutil.rmtree(p.root / "warehouse" / ".dagster")
    (p.root / "dagster.yaml").unlink()
    a, b = ragpipe_cli(p.root, "ci"), ragpipe_cli(p.root, "ci")
    (code_a, out_a), (code_b, out_b) = a.finish(900), b.finish(900)
    blocked = any(v[0] in ("fail", "did_not_run", "error") for v in expected.values())
    for code, out in ((code_a, out_a), (code_b, out_b)):
        assert code == (1 if blocked else 0), out[-4000:]
        assert "GATE:" in out and "EVALUATION" in out, out[-4000:]
        assert not any(e in out for e in RAW_LOCK_ERRORS), out[-4000:]
    check_eval_invariants(p)
    check_ingest_invariants(p, embedder_tag(p))
    assert latest_verdicts(p) == expected

    # Outcomes, not a schedule: every run succeeded; each process observed the corpus once; one or two graph runs
    # (a process whose observation waited for the other's writer lock finds everything fresh and launches none).
    from dagster import DagsterRunStatus

    instance = dg.DagsterInstance.from_config(str(p.root))
    runs = instance.get_runs()
    assert runs and all(r.status == DagsterRunStatus.SUCCESS for r in runs), [(r.run_id, r.status) for r in runs]
    spans: dict[tuple[str, str], list[float]] = {}
    for run in runs:
        for e in instance.all_logs(run.run_id):
            if e.dagster_event is not None and e.dagster_event.event_type_value in ("STEP_START", "STEP_SUCCESS"):
                spans.setdefault((run.run_id, e.step_key), []).append(e.timestamp)
    steps: dict[str, set[str]] = {}
    for run_id, step in spans:
        steps.setdefault(run_id, set()).add(step)
    observations = [r for r, s in steps.items() if s == {"corpus"}]
    graph_runs = [r for r, s in steps.items() if s != {"corpus"}]
    assert len(observations) == 2 and 1 <= len(graph_runs) <= 2, steps
    # They really ran at the same time: a step of one process's runs overlapped a step of the other's (the waiting
    # step spans the other's writes). Runs of the same process never overlap, so any overlap is across processes.
    overlaps = [
        (k1, k2)
        for k1, (s1, e1) in spans.items()
        for k2, (s2, e2) in spans.items()
        if k1[0] < k2[0] and s1 < e2 and s2 < e1
    ]
    assert overlaps, spans


def test_endpoint_dies_part_way_and_a_429_storm(base: Path, tmp_path: Path) -> None:
    p = copy_project(base, tmp_path / "proj")
    retrieved = [
        r[0] for r in p.sql("SELECT question_id FROM latest_verdicts WHERE anchor_retrieved ORDER BY question_id")
    ]
    storm = retrieved[:5]  # answered first (questions go in id order): 429 on every attempt
    mark_questions(p, {q: "[[429]]" for q in storm} | {q: "[[slowbody]]" for q in latest_verdicts(p) if q not in storm})
    with OpenAIServer(slow_s=0.25) as server:
        p.configure(answerer="openai", base_url=server.base_url)
        ci = ragpipe_cli(p.root, "ci", "--block", "error", env=python_env(RAGPIPE_TEST_KEY="test-key"))
        # 5 storm tests x 3 attempts, then some real answers: then the endpoint dies (connection refused from now on)
        wait_until(lambda: len(server.requests()) >= 15 + 8, 600, "the storm and a few answers")
        server.kill()
        code, out = ci.finish(600)
    assert code == 1, out[-4000:]  # only errors block here: the gate fails because of them
    assert "GATE: BLOCKED" in out and "\nERROR (" in out, out[-4000:]
    assert "Traceback" not in out
    rows = {
        r[0]: r[1:]
        for r in p.sql(
            "SELECT v.question_id, v.verdict, v.reason, v.anchor_retrieved, a.error FROM latest_verdicts v "
            "JOIN answers a USING (eval_run_id, question_id)"
        )
    }
    for q in storm:
        verdict, reason, anchor_retrieved, error = rows[q]
        assert error and error.startswith("HTTP 429 from") and "after 3 attempt(s)" in error, error
        if anchor_retrieved:
            assert verdict == "error" and "HTTP 429" in reason and q in out
    refused = [q for q, r in rows.items() if r[3] and "cannot reach" in r[3]]
    answered = [q for q, r in rows.items() if r[3] is None]
    assert len(refused) >= 5 and len(answered) >= 5, (len(refused), len(answered))
    for q in refused:
        assert "Connection refused" in rows[q][3] or "Errno 111" in rows[q][3], rows[q][3]
        if rows[q][2]:
            assert rows[q][0] == "error" and rows[q][1].startswith("answerer error: cannot reach")
    assert all(rows[q][0] in ("pass", "fail", "did_not_run") for q in answered)
    check_eval_invariants(p)

"""The golden_set and stamps stages: the golden set file validated against the corpus and recorded, and every
test's quote located in the current chunking (history is kept)."""

from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

import duckdb

from ragpipe.core import Log, no_log
from ragpipe.golden import ChunkSpan, GoldenProblem, GoldenSetError, GoldenTest, Restamper, check_quotes, load_golden
from ragpipe.settings import Settings
from ragpipe.warehouse import insert_rows, transaction


def stamp_line(status: str, reason: str, sep: str = " ") -> str:
    """'moved ch_a -> ch_b', or the reason alone when it already begins with the status ('missing from corpus: ...')."""
    if reason.startswith(status):
        return reason
    return f"{status}{sep}{reason}" if reason else status


GOLDEN_COLUMNS = (
    "question_id kind question expected_answer trap_value quote source file_anchor_ids embedder_tag last_validated "
    "line golden_path golden_sha256 run_id"
).split()


def documents_text(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return dict(con.execute("SELECT doc_id, text FROM documents").fetchall())


def golden_key(settings: Settings, path: Path) -> str:
    """How runs name their golden set file: relative to the project (the settings file's folder) when inside it, so
    the history of a test survives a moved checkout or a CI clone in a new directory; else its absolute path."""
    try:
        return path.resolve().relative_to(settings.root.resolve()).as_posix()
    except ValueError:
        return str(path.resolve())


def load_golden_stage(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = no_log
) -> dict[str, Any]:
    """Validate the golden set file (syntax, fields, duplicates, dates, quotes in the corpus) and record it."""
    if settings.golden.path is None:
        raise GoldenSetError(
            [GoldenProblem(str(settings.source), 0, None, "golden.path", "no golden set configured; set [golden].path")]
        )
    golden = load_golden(settings.golden.path)
    problems = check_quotes(golden, documents_text(con))
    broken = [p for p in problems if not p.drift]
    if broken:
        raise GoldenSetError(broken)
    # Corpus drift (a document gone, a quote reworded) is per test: those tests did not run (the stamps say why);
    # every other test is evaluated.
    drift = [p for p in problems if p.drift]
    for p in drift:
        log(f"corpus drift: {p}")
    key = golden_key(settings, golden.path)
    with transaction(con):
        # Runs recorded under this file's absolute path (before the key was relative, or in the checkout before it
        # moved) join its history: a flip is compared with the run before it wherever the project lives.
        con.execute(
            "UPDATE eval_runs SET golden_path = ? WHERE golden_path LIKE '/%' AND (golden_path = ? OR "
            "golden_path LIKE '%/' || ?)",
            [key, str(golden.path), key],
        )
        con.execute("DELETE FROM golden_tests")
        insert_rows(
            con,
            "golden_tests",
            GOLDEN_COLUMNS,
            [
                [
                    t.question_id,
                    t.kind,
                    t.question,
                    t.expected_answer,
                    t.trap_value,
                    t.quote,
                    t.source,
                    t.anchor_ids,
                    t.embedder_tag,
                    t.last_validated,
                    t.line,
                    key,
                    golden.sha256,
                    run_id,
                ]
                for t in golden.tests
            ],
        )
    kinds = {k: sum(t.kind == k for t in golden.tests) for k in ("negative", "positive")}
    log(
        f"golden set {golden.path}: {len(golden.tests)} tests ({kinds['negative']} negative, {kinds['positive']} positive)"
    )
    return {
        "tests": len(golden.tests),
        **kinds,
        "path": str(golden.path),
        "sha256": golden.sha256,
        "drifted": [f"{p.question_id}: {p.message}" for p in drift],
    }


def golden_tests(con: duckdb.DuckDBPyConnection) -> list[GoldenTest]:
    rows = con.execute(
        "SELECT question_id, question, expected_answer, kind, line, file_anchor_ids, quote, source, trap_value, "
        "embedder_tag, CAST(last_validated AS VARCHAR) FROM golden_tests ORDER BY line"
    ).fetchall()
    return [GoldenTest(r[0], r[1], r[2], r[3], r[4], list(r[5] or []), r[6], r[7], r[8], r[9], r[10]) for r in rows]


def restamper_for(con: duckdb.DuckDBPyConnection, chunker_tag: str) -> Restamper:
    spans = [
        ChunkSpan(*r)
        for r in con.execute(
            "SELECT chunk_id, doc_id, start_char, end_char FROM chunks WHERE chunker_tag = ?", [chunker_tag]
        ).fetchall()
    ]
    return Restamper(documents_text(con), spans)


def stamp_stage(settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = no_log) -> dict[str, Any]:
    """Locate every test's quote in the current chunking and record the stamps (history is kept)."""
    tag = settings.chunker_tag
    stamper = restamper_for(con, tag)
    t0 = time.perf_counter()
    stamps = [stamper.stamp(t) for t in golden_tests(con)]
    secs = time.perf_counter() - t0
    with transaction(con):
        insert_rows(
            con,
            "stamps",
            "chunker_tag question_id anchor status old_ids new_ids doc_id reason run_id".split(),
            [
                [tag, s.question_id, s.anchor, s.status, list(s.old_ids), list(s.new_ids), s.doc_id, s.reason, run_id]
                for s in stamps
            ],
            stamped_at="now()",
        )
    counts: dict[str, int] = {}
    for st in stamps:
        counts[st.status] = counts.get(st.status, 0) + 1
    changed = [s for s in stamps if s.status not in ("unchanged",)]
    for s in changed:
        if s.status != "new":
            log(f"stamp {s.question_id} ({s.anchor}): {stamp_line(s.status, s.reason)}")
    log("stamps: " + ", ".join(f"{n} {k}" for k, n in sorted(counts.items())))
    return {
        "chunker_tag": tag,
        "tests": len(stamps),
        "seconds": round(secs, 4),
        **counts,
        "changes": [dataclasses.asdict(s) for s in changed],
    }


def current_anchors(con: duckdb.DuckDBPyConnection, chunker_tag: str) -> dict[str, tuple[tuple[str, ...], str, str]]:
    """question_id -> (anchor ids to require in the retrieved set, stamp status, stamp reason) under the current
    chunking."""
    rows = con.execute(
        "SELECT s.question_id, s.status, s.new_ids, s.old_ids, s.reason FROM latest_stamps s "
        "JOIN golden_tests g USING (question_id) WHERE s.chunker_tag = ?",
        [chunker_tag],
    ).fetchall()
    return {
        qid: (tuple(new or ()) if status != "no_quote" else tuple(old or ()), status, reason or "")
        for qid, status, new, old, reason in rows
    }

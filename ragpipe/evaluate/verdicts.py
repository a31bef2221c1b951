"""The verdicts stage: every test of the latest answered eval run judged (pass, fail, needs_review, did_not_run or
error, plus unverified) by the verdict rule, by the judge where the rule cannot settle it, and by a person's earlier
review of the same answer (ragpipe.evaluate.reviews)."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import duckdb

from ragpipe.core import VERDICTS, Log, no_log
from ragpipe.evaluate.answers import retrieved_texts
from ragpipe.evaluate.reviews import apply_reviews
from ragpipe.evaluate.runs import fork_eval_run, judged_elsewhere, latest_eval_run
from ragpipe.evaluate.stamps import current_anchors, golden_tests
from ragpipe.evaluate.subject import is_subject_run, subject_anchors
from ragpipe.golden import GoldenTest
from ragpipe.rag import Answer
from ragpipe.settings import Settings
from ragpipe.verdicts import Verdict, decide, settle
from ragpipe.warehouse import first, insert_rows, transaction

VERDICT_COLUMNS = (
    "eval_run_id question_id kind verdict reason anchor_ids anchor_retrieved refused took_trap matched_by unverified "
    "test_embedder_tag judge_reply test_sha source_sha anchor_rank"
).split()


def test_sha(t: GoldenTest) -> str:
    """The test's own content (not its stamps or validation date): an edit of the golden line changes it."""
    own = [t.kind, t.question, t.expected_answer, t.trap_value, t.quote, t.source]
    return hashlib.sha256(json.dumps(own).encode()).hexdigest()[:16]


def anchor_rank(retrieved: list[str], anchor_ids: tuple[str, ...] | list[str]) -> int | None:
    """1-based rank of the first anchor chunk in the retrieved list; None when no anchor chunk was retrieved."""
    return next((i for i, cid in enumerate(retrieved, 1) if cid in set(anchor_ids)), None)


def anchor_source_sha(
    con: duckdb.DuckDBPyConnection, chunker_tag: str, tests: list[GoldenTest]
) -> dict[str, str | None]:
    """Content hash of each test's anchor document: the one its stamp found the quote in (a renamed file is followed),
    else the `source` its golden line names; None when that document is not in the corpus."""
    found = dict(
        con.execute(
            "SELECT s.question_id, d.sha256 FROM latest_stamps s JOIN documents d USING (doc_id) "
            "WHERE s.chunker_tag = ? AND s.status <> 'missing'",
            [chunker_tag],
        ).fetchall()
    )
    docs = dict(con.execute("SELECT doc_id, sha256 FROM documents").fetchall())
    return {t.question_id: found.get(t.question_id) or docs.get(t.source or "") for t in tests}


def _retrieved(con: duckdb.DuckDBPyConnection, eval_run_id: str) -> dict[str, list[str]]:
    """question_id -> the chunk ids retrieved for it, best first."""
    retrieved: dict[str, list[str]] = {}
    for qid, cid in con.execute(
        "SELECT question_id, chunk_id FROM retrievals WHERE eval_run_id = ? ORDER BY question_id, rank", [eval_run_id]
    ).fetchall():
        retrieved.setdefault(qid, []).append(cid)
    return retrieved


def _answers(con: duckdb.DuckDBPyConnection, eval_run_id: str) -> dict[str, Answer]:
    return {
        r[0]: Answer(r[1], r[3], r[4], r[5], error=r[2])
        for r in con.execute(
            "SELECT question_id, answer, error, latency_s, input_tokens, output_tokens FROM answers WHERE eval_run_id = ?",
            [eval_run_id],
        ).fetchall()
    }


def _decide_all(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    eval_run_id: str,
    chunker_tag: str,
    embedder_tag: str,
    retrieved: dict[str, list[str]],
    answers: dict[str, Answer],
    contexts: dict[str, list[str]],
) -> list[tuple[GoldenTest, Verdict]]:
    """The verdict rule on every test, in golden-set order, with its anchor as the current chunking stamps it and
    the retrieved texts the answer is grounded in."""
    app = is_subject_run(con, eval_run_id)  # the team's app: its anchors are found in the contexts it returned
    anchors = subject_anchors(con, eval_run_id) if app else current_anchors(con, chunker_tag)
    verdicts = []
    for t in golden_tests(con):
        ids, status, why = anchors.get(t.question_id, ((), "missing", ""))
        ans = answers.get(t.question_id) or Answer("", 0.0, 0, 0, error="no answer recorded for this test")
        if app and ans.error and ans.error.startswith("the app's call failed"):
            ids, status = ("app call",), "unchanged"  # no retrieval happened: the test's verdict is error
            retrieved = {**retrieved, t.question_id: ["app call"]}
        verdicts.append(
            (
                t,
                decide(
                    t,
                    ids,
                    status,
                    retrieved.get(t.question_id, []),
                    ans,
                    settings.answerer.refusal_phrases,
                    embedder_tag,
                    stamp_reason=why,
                    contexts=contexts.get(t.question_id, ()),
                ),
            )
        )
    return verdicts


def _record_verdicts(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    eval_run_id: str,
    chunker_tag: str,
    verdicts: list[tuple[GoldenTest, Verdict]],
    replies: dict[str, tuple[Verdict, str | None]],
    retrieved: dict[str, list[str]],
) -> None:
    """The eval run's verdicts, replacing any it had, and the run marked judged by `run_id`."""
    sources = anchor_source_sha(con, chunker_tag, [t for t, _ in verdicts])
    with transaction(con):
        con.execute("DELETE FROM verdicts WHERE eval_run_id = ?", [eval_run_id])
        insert_rows(
            con,
            "verdicts",
            VERDICT_COLUMNS,
            [
                [
                    eval_run_id,
                    v.question_id,
                    v.kind,
                    v.verdict,
                    v.reason,
                    list(v.anchor_ids),
                    v.anchor_retrieved,
                    v.refused,
                    v.took_trap,
                    v.matched_by,
                    v.unverified,
                    t.embedder_tag,
                    replies.get(t.question_id, (v, None))[1],
                    test_sha(t),
                    sources[t.question_id],
                    anchor_rank(retrieved.get(t.question_id, []), v.anchor_ids),
                ]
                for t, v in verdicts
            ],
            judged_at="now()",
        )
        con.execute("UPDATE eval_runs SET verdict_run_id = ? WHERE eval_run_id = ?", [run_id, eval_run_id])


def verdict_stage(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = no_log, trigger: str = "manual"
) -> dict[str, Any]:
    """Judge every test of the latest answered eval run: pass, fail, did_not_run or error, plus unverified (a new
    eval run when that one was already judged by another run: the judge or the verdict rule changed)."""
    eval_run_id = latest_eval_run(con, "answered_run_id IS NOT NULL", run_id)
    if judged_elsewhere(con, eval_run_id, run_id):
        eval_run_id = fork_eval_run(con, eval_run_id, run_id, trigger, answers=True)
    query = "SELECT chunker_tag, embedder_tag FROM eval_runs WHERE eval_run_id = ?"
    chunker_tag, embedder_tag = first(con.execute(query, [eval_run_id]))
    retrieved = _retrieved(con, eval_run_id)
    answers = _answers(con, eval_run_id)
    contexts = retrieved_texts(con, eval_run_id)
    verdicts = _decide_all(settings, con, eval_run_id, chunker_tag, embedder_tag, retrieved, answers, contexts)
    replies = {}
    if settings.judge.enabled:
        replies = settle(settings.judge, verdicts, {q: a.text for q, a in answers.items()})
        if replies:
            log(
                f"the judge ({settings.judge.openai.model}) ruled on {len(replies)} answer(s) the rules could not settle"
            )
    verdicts = [(t, replies[t.question_id][0] if t.question_id in replies else v) for t, v in verdicts]
    verdicts, reviewed = apply_reviews(con, verdicts, answers, {t.question_id: test_sha(t) for t, _ in verdicts})
    if reviewed:
        log(f"{reviewed} verdict(s) decided by an earlier review of the same answer (ragpipe review)")
    _record_verdicts(con, run_id, eval_run_id, chunker_tag, verdicts, replies, retrieved)
    counts = {k: sum(v.verdict == k for _, v in verdicts) for k in VERDICTS}
    counts["unverified"] = sum(v.unverified for _, v in verdicts)
    log("verdicts: " + ", ".join(f"{k}={n}" for k, n in counts.items()))
    return {"eval_run_id": eval_run_id, "tests": len(verdicts), **counts}

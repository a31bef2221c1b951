"""The answers stage: every question of the latest eval run answered from its retrieved chunks."""

from __future__ import annotations

import dataclasses
import json
import time
from typing import Any

import duckdb

from ragpipe.core import Log, no_log
from ragpipe.evaluate.runs import fork_eval_run, judged_elsewhere, latest_eval_run, progress_line
from ragpipe.rag import Answer, load_answerer
from ragpipe.settings import Settings
from ragpipe.warehouse import insert_rows, transaction

ANSWER_COLUMNS = "eval_run_id question_id answer error latency_s input_tokens output_tokens support".split()


def _public_answerer_settings(settings: Settings) -> str:
    """The answerer's settings as stored: the name of the key's variable, never its value."""
    return json.dumps(dataclasses.asdict(settings.answerer), sort_keys=True)


def retrieved_texts(con: duckdb.DuckDBPyConnection, eval_run_id: str) -> dict[str, list[str]]:
    """question_id -> the texts of the chunks retrieved for it, best first: what the answerer was shown (and what the
    verdict rule grounds an answer in)."""
    out: dict[str, list[str]] = {}
    for qid, text in con.execute(  # the team's app: the contexts it returned
        "SELECT question_id, text FROM subject_contexts WHERE eval_run_id = ? ORDER BY question_id, rank",
        [eval_run_id],
    ).fetchall():
        out.setdefault(qid, []).append(text)
    if out:
        return out
    for qid, text in con.execute(
        "SELECT r.question_id, c.text FROM retrievals r JOIN eval_runs e USING (eval_run_id) "
        "JOIN chunks c ON c.chunk_id = r.chunk_id AND c.chunker_tag = e.chunker_tag "
        "WHERE r.eval_run_id = ? ORDER BY r.question_id, r.rank",
        [eval_run_id],
    ).fetchall():
        out.setdefault(qid, []).append(text)
    return out


def _app_answers(con: duckdb.DuckDBPyConnection, eval_run_id: str) -> dict[str, Answer]:
    """The answers the team's app gave (or the reason its call failed); a test the app only retrieved for is left
    to [answerer]."""
    return {
        qid: Answer(text or "", latency or 0.0, 0, 0, error=f"the app's call failed: {error}" if error else None)
        for qid, text, error, latency in con.execute(
            "SELECT question_id, answer, error, latency_s FROM subject_replies WHERE eval_run_id = ? "
            "AND (answer IS NOT NULL OR error IS NOT NULL)",
            [eval_run_id],
        ).fetchall()
    }


def answer_stage(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = no_log, trigger: str = "manual"
) -> dict[str, Any]:
    """Answer every question of the latest eval run from its retrieved chunks (a new eval run when that one was
    already judged: the answerer changed, or the nightly run re-answers)."""
    eval_run_id = latest_eval_run(con, "TRUE", run_id)
    if judged_elsewhere(con, eval_run_id, run_id):
        eval_run_id = fork_eval_run(con, eval_run_id, run_id, trigger, answers=False)
    questions = dict(con.execute("SELECT question_id, question FROM golden_tests").fetchall())
    texts = retrieved_texts(con, eval_run_id)
    contexts = {qid: texts.get(qid, []) for qid in questions}
    replies = _app_answers(con, eval_run_id)  # the team's app answered already (it is asked at retrieval)
    answerer = load_answerer(settings.answerer) if len(replies) < len(questions) else None
    label = " + ".join(x for x in ("the app" if replies else "", answerer.label if answerer else "") if x)
    qids = sorted(questions)
    todo = [q for q in qids if q not in replies]
    t0 = time.perf_counter()
    answered: list[Answer] = []
    step = max(1, getattr(answerer, "progress_step", len(todo) or 1))
    for i in range(0, len(todo), step) if answerer is not None else ():
        assert answerer is not None  # the loop runs only with an answerer
        answered += answerer.answer_all([(questions[q], contexts[q]) for q in todo[i : i + step]])
        if len(answered) < len(todo):
            log(progress_line("answered", len(answered), len(todo), time.perf_counter() - t0, todo[len(answered) - 1]))
    by_qid = {**replies, **dict(zip(todo, answered))}
    answers = [by_qid[q] for q in qids]
    secs = time.perf_counter() - t0
    with transaction(con):
        con.execute("DELETE FROM answers WHERE eval_run_id = ?", [eval_run_id])
        rows = [
            [eval_run_id, q, a.text, a.error, a.latency_s, a.input_tokens, a.output_tokens, a.support]
            for q, a in zip(qids, answers)
        ]
        insert_rows(con, "answers", ANSWER_COLUMNS, rows)
        con.execute(
            "UPDATE eval_runs SET answerer = ?, answerer_label = ?, answered_run_id = ? WHERE eval_run_id = ?",
            [_public_answerer_settings(settings), label, run_id, eval_run_id],
        )
    errors = sum(a.error is not None for a in answers)
    log(f"answered {len(answers)} questions with {label} in {secs:.2f} s ({errors} errors)")
    return {
        "eval_run_id": eval_run_id,
        "answerer": label,
        "answers": len(answers),
        "errors": errors,
        "seconds": round(secs, 3),
        "questions_per_s": round(len(answers) / secs, 2) if secs > 0 else None,
        "input_tokens": sum(a.input_tokens for a in answers),
        "output_tokens": sum(a.output_tokens for a in answers),
    }

"""Eval runs across the answers and verdicts stages: the latest run ready for a stage, a new run that reuses another's
retrievals (and answers) instead of overwriting verdicts that are history, failures kept, progress lines."""

from __future__ import annotations

import duckdb

from ragpipe.core import time_left
from ragpipe.warehouse import transaction


def record_failure(con: duckdb.DuckDBPyConnection, run_id: str, asset: str, exc: BaseException) -> None:
    """Keep an evaluation stage's failure in the warehouse (eval_failures), so that `latest_verdicts` and
    `evaluation_status` say the verdicts are older than the last attempt, and why."""
    message = f"{type(exc).__name__}: {exc}"[:4000]
    con.execute("INSERT INTO eval_failures VALUES (?, ?, ?, now())", [run_id, asset, message])


def progress_line(what: str, done: int, total: int, elapsed_s: float, last: str = "") -> str:
    """ "answered 12/43 (neg_12): 61 s elapsed, about 2 min 30 s left" (the rate so far gives the estimate)."""
    eta = time_left(done, total, elapsed_s) or "about 0 s left"
    return f"{what} {done}/{total}{f' ({last})' if last else ''}: {elapsed_s:.0f} s elapsed, {eta}"


def latest_eval_run(con: duckdb.DuckDBPyConnection, where: str, run_id: str) -> str:
    """The eval run this graph run made (its retrievals, or an earlier attempt of this step forked it) when it is
    ready for the stage; otherwise the latest one ready. Another process's run that started later is not ours."""
    row = con.execute(
        f"SELECT eval_run_id FROM eval_runs WHERE {where} ORDER BY eval_run_id = ? DESC, started_at DESC LIMIT 1",
        [run_id],
    ).fetchone()
    if row is None:
        raise RuntimeError("no eval run is ready for this stage; materialize `retrievals` first")
    return row[0]


def fork_eval_run(con: duckdb.DuckDBPyConnection, eval_run_id: str, run_id: str, trigger: str, answers: bool) -> str:
    """A new eval run `run_id` that reuses the retrievals (and with `answers`, the answers) of `eval_run_id`.

    Answering or judging again after a change below retrieval (the answerer, the judge) must not overwrite the
    verdicts of a run that was already judged: they are history, and `verdict_changes` compares the two.
    """
    with transaction(con):
        con.execute(
            "INSERT INTO eval_runs SELECT * REPLACE (? AS eval_run_id, now() AS started_at, ? AS trigger, "
            "NULL AS verdict_run_id) FROM eval_runs WHERE eval_run_id = ?",
            [run_id, trigger, eval_run_id],
        )
        for table in ("retrievals", "subject_contexts", "subject_replies"):  # what was retrieved (or the app said)
            con.execute(
                f"INSERT INTO {table} SELECT * REPLACE (? AS eval_run_id) FROM {table} WHERE eval_run_id = ?",
                [run_id, eval_run_id],
            )
        if answers:
            con.execute(
                "INSERT INTO answers SELECT * REPLACE (? AS eval_run_id) FROM answers WHERE eval_run_id = ?",
                [run_id, eval_run_id],
            )
        else:
            con.execute("UPDATE eval_runs SET answered_run_id = NULL WHERE eval_run_id = ?", [run_id])
    return run_id


def judged_elsewhere(con: duckdb.DuckDBPyConnection, eval_run_id: str, run_id: str) -> bool:
    row = con.execute("SELECT verdict_run_id FROM eval_runs WHERE eval_run_id = ?", [eval_run_id]).fetchone()
    return row is not None and row[0] is not None and row[0] != run_id and eval_run_id != run_id

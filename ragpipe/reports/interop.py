"""The latest run's verdicts in the formats of the tools a team already uses, to open them there: a Ragas-style dataset
(JSON Lines: `user_input`, `retrieved_contexts`, `response`, `reference`, plus ragpipe's verdict columns) and a
promptfoo results file (what `promptfoo eval -o results.json` writes; `promptfoo import` reads it). A test that did
not run is neither a pass nor a failure there: promptfoo counts it as an error, with the reason."""

from __future__ import annotations

import datetime as dt
import json
import uuid
from typing import Any

import duckdb

EXPORT_FORMATS = ("ragas", "promptfoo")
_COLUMNS = ("question_id", "kind", "question", "expected_answer", "answer", "verdict", "reason", "anchor_retrieved",
            "unverified", "eval_run_id", "answered_run_id", "judged_at")  # fmt: skip


def verdict_rows(con: duckdb.DuckDBPyConnection) -> list[dict[str, Any]]:
    """The latest judged run, one row per test: the question, the answer, what was retrieved, the verdict."""
    from ragpipe.evaluate import retrieved_texts

    rows = con.execute(
        "SELECT v.question_id, v.kind, g.question, g.expected_answer, coalesce(a.answer, ''), v.verdict, v.reason, "
        "v.anchor_retrieved, v.unverified, v.eval_run_id, r.answered_run_id, v.judged_at "
        "FROM latest_verdicts v JOIN latest_eval_run r USING (eval_run_id) "
        "LEFT JOIN golden_tests g USING (question_id) "
        "LEFT JOIN answers a ON a.eval_run_id = v.eval_run_id AND a.question_id = v.question_id "
        "ORDER BY v.question_id"
    ).fetchall()
    out = [dict(zip(_COLUMNS, r)) for r in rows]
    if out:
        contexts = retrieved_texts(con, out[0]["eval_run_id"])
        for row in out:
            row["contexts"] = contexts.get(row["question_id"], [])
    return out


def ragas_lines(rows: list[dict[str, Any]]) -> str:
    """One JSON object per test, Ragas' SingleTurnSample fields first (EvaluationDataset.from_jsonl reads them)."""
    out = []
    for r in rows:
        out.append({
            "user_input": r["question"], "retrieved_contexts": r["contexts"], "response": r["answer"],
            "reference": r["expected_answer"], "ragpipe_question_id": r["question_id"], "ragpipe_kind": r["kind"],
            "ragpipe_verdict": r["verdict"], "ragpipe_reason": r["reason"],
            "ragpipe_anchor_retrieved": r["anchor_retrieved"], "ragpipe_unverified": r["unverified"],
            "ragpipe_eval_run_id": r["eval_run_id"],
        })  # fmt: skip
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in out)


def _promptfoo_result(i: int, r: dict[str, Any]) -> dict[str, Any]:
    passed = r["verdict"] == "pass"
    error = r["verdict"] in ("did_not_run", "error")
    reason = f"ragpipe {r['verdict']}: {r['reason']}"
    check = {"type": "javascript", "value": f"ragpipe verdict of {r['question_id']} ({r['kind']})"}
    grading = {"pass": passed, "score": 1 if passed else 0, "reason": reason, "namedScores": {},
               "componentResults": [{"pass": passed, "score": 1 if passed else 0, "reason": reason,
                                     "assertion": check}]}  # fmt: skip
    variables = {"question": r["question"], "expected_answer": r["expected_answer"],
                 "context": "\n\n".join(r["contexts"])}  # fmt: skip
    result = {
        "id": str(uuid.uuid5(uuid.NAMESPACE_URL, f"ragpipe:{r['eval_run_id']}:{r['question_id']}")),
        "promptIdx": 0, "testIdx": i, "promptId": "ragpipe", "provider": {"id": "ragpipe", "label": "ragpipe"},
        "prompt": {"raw": r["question"], "label": "{{question}}"},
        "response": {"output": r["answer"]}, "success": passed, "score": 1 if passed else 0, "latencyMs": 0,
        "namedScores": {}, "gradingResult": grading, "vars": variables,
        "testCase": {"description": f"{r['question_id']} ({r['kind']})", "vars": variables, "assert": [check],
                     "metadata": {"ragpipe_verdict": r["verdict"]}},
        "metadata": {"ragpipe_verdict": r["verdict"], "ragpipe_reason": r["reason"]},
        "failureReason": 0 if passed else (2 if error else 1),  # promptfoo: 1 an assertion failed, 2 an error
    }  # fmt: skip
    if not passed:
        result["error"] = reason
    return result


def promptfoo_results(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """promptfoo's results file (version 3) for the latest run: one result per test, its verdict as the grade."""
    results = [_promptfoo_result(i, r) for i, r in enumerate(rows)]
    stats = {
        "successes": sum(r["success"] for r in results),
        "failures": sum(r["failureReason"] == 1 for r in results),
        "errors": sum(r["failureReason"] == 2 for r in results),
        "tokenUsage": {"total": 0, "prompt": 0, "completion": 0, "cached": 0, "numRequests": len(results)},
    }
    when = rows[0]["judged_at"] if rows else dt.datetime.now(dt.timezone.utc)
    run = rows[0]["eval_run_id"] if rows else "none"
    metrics = {"score": stats["successes"], "testPassCount": stats["successes"], "testFailCount": stats["failures"],
               "testErrorCount": stats["errors"], "assertPassCount": stats["successes"],
               "assertFailCount": stats["failures"] + stats["errors"], "totalLatencyMs": 0,
               "tokenUsage": stats["tokenUsage"], "namedScores": {}, "namedScoresCount": {}, "cost": 0}  # fmt: skip
    prompt = {
        "raw": "{{question}}",
        "label": "{{question}}",
        "id": "ragpipe",
        "provider": "ragpipe",
        "metrics": metrics,
    }
    return {
        "evalId": f"eval-ragpipe-{run}",
        "results": {"version": 3, "timestamp": when.isoformat(), "prompts": [prompt], "results": results,
                    "stats": stats},
        "config": {"description": f"ragpipe eval run {run}", "prompts": ["{{question}}"], "providers": ["ragpipe"],
                   "tests": [r["testCase"] for r in results]},
        "shareableUrl": None,
        "metadata": {"exportedBy": "ragpipe", "evalRunId": run},
    }  # fmt: skip

"""Every figure the CI summary prints (text and Markdown), recomputed from the warehouse tables by other means than
the code that printed it: the counts per verdict and of unverified tests, each section's count, the tests the
retrieval figures are over, hit@k / MRR / recall@k from `retrievals` and the stamps, the flips and their causes."""

from __future__ import annotations

import re
from typing import Any

import duckdb

from ragpipe.reports import load_summary, render_markdown, render_text

BLOCK = ("fail", "needs_review", "did_not_run", "error")


def _one(con: duckdb.DuckDBPyConnection, sql: str, params: list[Any]) -> Any:
    return con.execute(sql, params).fetchone()


def _retrieval_truth(con: duckdb.DuckDBPyConnection, run: str, chunker: str, k: int) -> tuple[int, float, float, float]:
    """(tests with anchors, hit@k, MRR, recall@k) of ragpipe's own pipeline, in SQL: a test hits when every anchor
    part is in its top k, its reciprocal rank is that of the last part."""
    return _one(
        con,
        """
        WITH rel AS (
            SELECT s.question_id, unnest(CASE WHEN s.status = 'no_quote' THEN s.old_ids ELSE s.new_ids END) AS chunk_id
            FROM latest_stamps s JOIN golden_tests g USING (question_id) WHERE s.chunker_tag = ?
        ),
        per AS (
            SELECT rel.question_id, count(*) AS parts, count(r.rank) AS found, max(r.rank) AS last_rank
            FROM rel LEFT JOIN retrievals r
              ON r.eval_run_id = ? AND r.question_id = rel.question_id AND r.chunk_id = rel.chunk_id AND r.rank <= ?
            GROUP BY rel.question_id
        )
        SELECT count(*), avg((found = parts)::INT), avg(CASE WHEN found = parts THEN 1.0 / last_rank ELSE 0 END),
               avg(found / parts)
        FROM per
        """,
        [chunker, run, k],
    )


def assert_summary_true(con: duckdb.DuckDBPyConnection) -> str:
    """Checks the latest judged run's summary against the tables; returns the text for further checks."""
    s = load_summary(con)
    assert s is not None
    text, md = render_text(s, BLOCK), render_markdown(s, BLOCK)
    run, chunker, k, subject = _one(
        con, "SELECT eval_run_id, chunker_tag, k, subject FROM eval_runs WHERE eval_run_id = ?", [s.eval_run_id]
    )
    counts = dict(
        con.execute("SELECT verdict, count(*) FROM verdicts WHERE eval_run_id = ? GROUP BY 1", [run]).fetchall()
    )
    n, unverified = _one(
        con, "SELECT count(*), count(*) FILTER (WHERE unverified) FROM verdicts WHERE eval_run_id = ?", [run]
    )
    head = (
        f"{n} tests: {counts.get('pass', 0)} pass, {counts.get('fail', 0)} fail, {counts.get('needs_review', 0)} needs "
        f"review, {counts.get('did_not_run', 0)} did not run, {counts.get('error', 0)} error; {unverified} unverified"
    )
    assert head in text, (head, text[:600])
    row = (
        f"| {counts.get('pass', 0)} | {counts.get('fail', 0)} | {counts.get('needs_review', 0)} | "
        f"{counts.get('did_not_run', 0)} | {counts.get('error', 0)} | {unverified} |"
    )
    assert row in md, (row, md[:600])
    for title, verdict in (("FAIL", "fail"), ("NEEDS REVIEW", "needs_review"), ("TEST DID NOT RUN", "did_not_run")):
        if counts.get(verdict):
            assert f"\n{title} ({counts[verdict]})" in text and f"### {title} ({counts[verdict]})" in md
        else:
            assert f"\n{title} (" not in text
    if unverified:
        assert f"UNVERIFIED UNDER CURRENT EMBEDDER ({unverified})" in text

    found = re.search(
        r"retrieval of anchors over the (\d+) of (\d+) tests with (a stamped anchor|an anchor quote)"
        r"(?:, (\d+) of them not among the app's contexts \(each a miss\))?: "
        r"hit@(\d+)=([\d.]+)  MRR=([\d.]+)  recall@\d+=([\d.]+)",
        text,
    )
    assert found, text[:800]
    over, of, _, missed, shown_k, hit, mrr, recall = found.groups()
    assert int(of) == n and int(shown_k) == k
    if subject is None:
        truth = _retrieval_truth(con, run, chunker, k)
        assert int(over) == truth[0], (over, truth)
        assert (hit, mrr, recall) == tuple(f"{x or 0:.3f}" for x in truth[1:]), (found.groups(), truth)
    else:
        quoted, none = _one(
            con,
            "SELECT count(*) FILTER (WHERE coalesce(g.quote, '') <> ''), "
            "count(*) FILTER (WHERE coalesce(g.quote, '') <> '' AND r.anchor_how = 'none') "
            "FROM subject_replies r JOIN golden_tests g USING (question_id) WHERE r.eval_run_id = ?",
            [run],
        )
        assert int(over) == quoted and int(missed or 0) == none, (found.groups(), quoted, none)
    assert f"hit@{k} and MRR {s.metric_scope}." in md

    flips = _one(con, "SELECT count(*) FROM verdict_changes WHERE eval_run_id = ?", [run])[0]
    if s.previous_run_id:
        assert f"CHANGED SINCE LAST RUN (vs run {s.previous_run_id[:8]}: {flips})" in text
        causes = [
            c for (c,) in con.execute("SELECT cause FROM verdict_changes WHERE eval_run_id = ?", [run]).fetchall()
        ]
        assert all(f"cause: {c}" in text for c in causes)
        assert all(len(set(c.split("; "))) == len(c.split("; ")) for c in causes), causes  # each cause once
    return text


def assert_materializations_true(con: duckdb.DuckDBPyConnection, result: Any) -> None:
    """The figures of the run's materializations and checks against the tables: the verdicts' counts and gate, each
    check's counts and the tests its description names, retrievals' hit@k and the tests it is over."""
    events = {
        e.asset_key.to_user_string(): e.materialization.metadata for e in result.get_asset_materialization_events()
    }
    if "verdicts" not in events:
        return
    meta = {k: v.value for k, v in events["verdicts"].items()}
    run = meta["eval_run_id"]
    by: dict[str, list[str]] = {}
    for q, v, unverified in con.execute(
        "SELECT question_id, verdict, unverified FROM verdicts WHERE eval_run_id = ? ORDER BY question_id", [run]
    ).fetchall():
        by.setdefault(v, []).append(q)
        if unverified:
            by.setdefault("unverified", []).append(q)
    for k in ("pass", "fail", "needs_review", "did_not_run", "error", "unverified"):
        assert meta[k] == len(by.get(k, [])), (k, meta[k], len(by.get(k, [])))
    assert meta["tests"] == sum(len(by.get(k, [])) for k in ("pass", "fail", "needs_review", "did_not_run", "error"))
    words = {"fail": "fail", "needs_review": "review", "error": "error", "did_not_run": "not run"}
    blocked = [f"{len(by[k])} {w}" for k, w in words.items() if by.get(k)]
    assert meta["gate"] == (f"BLOCKED ({', '.join(blocked)})" if blocked else "OK"), meta["gate"]
    checks = {c.check_name: c for c in result.get_asset_check_evaluations()}
    for name, kinds in (("no_failures", ("fail", "needs_review", "error")), ("every_test_ran", ("did_not_run",))):
        c = checks[name]
        assert c.passed == (not any(by.get(k) for k in kinds))
        for k in kinds:
            assert c.metadata[k].value == len(by.get(k, []))
            label = "did not run" if k == "did_not_run" else k
            if by.get(k):
                assert f"{label} ({len(by[k])}): {', '.join(by[k][:3])}" in (c.description or ""), c.description
    if "retrievals" in events:
        r = {k: v.value for k, v in events["retrievals"].items()}
        row = _one(
            con, "SELECT hit_at_k, metric_tests, n_tests FROM eval_runs WHERE eval_run_id = ?", [r["eval_run_id"]]
        )
        assert r["hit_at_k"] == row[0] and r["metrics_over"].startswith(f"{row[1]} of {row[2]} tests"), (r, row)

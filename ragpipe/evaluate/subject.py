"""The retrievals stage when the subject is the team's app: every test asked of the app, its answer and the contexts
it returned recorded, and each test's anchor looked for in those contexts, by the app's own chunk id when the golden
line carries it and the app returns ids, else by quote (markup-tolerant, a quote split across two returned contexts
of one source counts)."""

from __future__ import annotations

import json
import time
from typing import Any

import duckdb

from ragpipe.core import Log
from ragpipe.evaluate.runs import progress_line
from ragpipe.evaluate.stamps import golden_tests
from ragpipe.golden import GoldenTest, load_golden, plain_form, quote_form, quote_forms
from ragpipe.rag import Context, Observed, Reply, ask_all, load_subject, metrics, observe
from ragpipe.settings import Settings
from ragpipe.warehouse import first, insert_rows, transaction


def context_ids(contexts: tuple[Context, ...]) -> list[str]:
    """Each context's id as ranked: the app's own, else ctx<rank> (a repeated id gets its rank appended)."""
    out: list[str] = []
    for rank, c in enumerate(contexts, 1):
        cid = c.id or f"ctx{rank}"
        out.append(cid if cid not in out else f"{cid}#{rank}")
    return out


def _holds(text: str, forms: list[str]) -> bool:
    sides = {plain_form(text), quote_form(text)}
    return any(f in side for f in forms for side in sides)


def find_anchor(test: GoldenTest, contexts: tuple[Context, ...]) -> tuple[tuple[str, ...], str]:
    """(ids of the contexts that hold the test's anchor, how: id | quote | quote across two | none)."""
    ids = context_ids(contexts)
    by_id = tuple(i for i in test.anchor_ids if i in ids)
    if by_id and len(by_id) == len(test.anchor_ids):
        return by_id, "id"
    forms = quote_forms(test.quote or "")
    if not forms:
        return (), "none"
    found = tuple(i for i, c in zip(ids, contexts) if _holds(c.text, forms))
    if found:
        return found[:1], "quote"
    for (ia, a), (ib, b) in ((p, q) for p in zip(ids, contexts) for q in zip(ids, contexts) if p[0] != q[0]):
        if (a.source or "") == (b.source or "") and _holds(f"{a.text} {b.text}", forms):
            return (ia, ib), "quote across two"
    return (), "none"


NOT_RETURNED = "(anchor not among the app's contexts)"  # an id no context has: the test counts as a miss


def anchors_sought(tests: list[GoldenTest], found: list[tuple[tuple[str, ...], str]]) -> list[set[str]]:
    """The relevant ids per test for hit@k, MRR and recall@k over the app's contexts: the contexts that hold the
    anchor, and for a test whose anchor is in none of them an id no context has, so it counts as a miss (counting
    only the anchors found would make hit@k 1.0 whatever the app returned). A test with no quote is left out."""
    return [
        set(ids) if ids else ({NOT_RETURNED} if quote_forms(t.quote or "") else set())
        for t, (ids, _) in zip(tests, found)
    ]


def _reason(how: str, n: int, reply: Reply) -> str:
    """Why the anchor is missing from the app's contexts, worded to follow the anchor's name ("trap ...")."""
    if reply.error:
        return ""
    return f"quote in none of the {n} contexts the app returned" if how == "none" else ""


def _ask(settings: Settings, tests: list[GoldenTest], log: Log) -> tuple[list[Reply], str, float]:
    """Every test asked of the app, `concurrency` at a time, with progress lines: (replies, the app's label, s)."""
    cfg = settings.subject
    subject = load_subject(cfg)
    t0 = time.perf_counter()
    step = max(1, len(tests) // 10)

    def progress(done: int, total: int) -> None:
        if done % step == 0 and done < total:
            log(progress_line("asked the app", done, total, time.perf_counter() - t0))

    try:
        replies = ask_all(subject, [(t.question_id, t.question) for t in tests], cfg.concurrency, progress)
    finally:
        subject.close()
    return replies, subject.label, time.perf_counter() - t0


def _store(
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    tests: list[GoldenTest],
    replies: list[Reply],
    ranked: list[list[str]],
    found: list[tuple[tuple[str, ...], str]],
) -> None:
    """The app's contexts as the run's retrievals (1/rank standing for the score the app did not report), the
    contexts' texts, and its replies."""
    insert_rows(
        con,
        "retrievals",
        ["eval_run_id", "question_id", "rank", "chunk_id", "score"],
        [[run_id, t.question_id, i, cid, 1.0 / i] for t, ids in zip(tests, ranked) for i, cid in enumerate(ids, 1)],
    )
    insert_rows(
        con,
        "subject_contexts",
        ["eval_run_id", "question_id", "rank", "context_id", "text", "source"],
        [
            [run_id, t.question_id, i, cid, c.text, c.source]
            for t, r, ids in zip(tests, replies, ranked)
            for i, (cid, c) in enumerate(zip(ids, r.contexts), 1)
        ],
    )
    insert_rows(
        con,
        "subject_replies",
        ["eval_run_id", "question_id", "answer", "error", "latency_s", "anchor_how", "metadata"],
        [
            [run_id, t.question_id, r.answer, r.error, r.latency_s, how, json.dumps(r.metadata)]
            for t, r, (_, how) in zip(tests, replies, found)
        ],
    )


def subject_retrieve_stage(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, trigger: str, log: Log
) -> dict[str, Any]:
    """Open an eval run by asking the app every question: its contexts become the run's retrievals."""
    tests = golden_tests(con)
    replies, label, secs = _ask(settings, tests, log)
    found = [find_anchor(t, r.contexts) for t, r in zip(tests, replies, strict=True)]
    ranked = [context_ids(r.contexts) for r in replies]
    k = max([len(r) for r in ranked] or [settings.retriever.k])
    sought = anchors_sought(tests, found)
    m = metrics(ranked, sought, k)
    not_returned = sum(NOT_RETURNED in ids for ids in sought)
    identity: dict[str, Any] = next((r.metadata for r in replies if r.metadata), {})
    reported = identity.get("embedder")
    embedder_tag = settings.subject.embedder_tags.get(reported, reported) if reported else f"subject:{label}"
    golden_sha, golden_path = first(
        con.execute("SELECT any_value(golden_sha256), any_value(golden_path) FROM golden_tests")
    )
    with transaction(con):
        for table in ("retrievals", "subject_contexts", "subject_replies", "eval_runs"):
            con.execute(f"DELETE FROM {table} WHERE eval_run_id = ?", [run_id])
        con.execute(
            "INSERT INTO eval_runs (eval_run_id, started_at, chunker_tag, embedder_tag, retriever, golden_sha256, "
            "n_tests, trigger, hit_at_k, mrr, recall_at_k, k, golden_path, corpus_digest, subject, metric_tests, "
            "anchors_not_returned) VALUES (?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, '', ?, ?, ?)",
            [
                run_id,
                settings.chunker_tag,
                embedder_tag,
                json.dumps({"subject": label, **identity}),
                golden_sha or "",
                len(tests),
                trigger,
                m["hit_at_k"],
                m["mrr"],
                m["recall_at_k"],
                k,
                golden_path,
                label,
                m["n"],
                not_returned,
            ],
        )
        _store(con, run_id, tests, replies, ranked, found)
    errors = sum(r.error is not None for r in replies)
    log(
        f"asked {label} {len(tests)} questions in {secs:.1f} s ({errors} errors): hit@{k}={m['hit_at_k']:.3f} "
        f"MRR={m['mrr']:.3f} over the {m['n']} tests with an anchor quote ({not_returned} not among the app's "
        "contexts, each a miss)"
    )
    return {
        "eval_run_id": run_id,
        "questions": len(tests),
        "subject": label,
        "errors": errors,
        "seconds": round(secs, 3),
        "embedder": embedder_tag,
        "anchors_not_returned": not_returned,
        **{key: v for key, v in m.items() if key != "n"},
        "metrics_over": f"{m['n']} of {len(tests)} tests with an anchor quote, {not_returned} not among the app's "
        "contexts (each a miss)",
    }


def subject_anchors(con: duckdb.DuckDBPyConnection, eval_run_id: str) -> dict[str, tuple[tuple[str, ...], str, str]]:
    """question_id -> (anchor ids among the app's contexts, status, reason) for the verdict rule: an anchor the app's
    contexts do not hold reads 'missing' with the reason, so the test did not run."""
    tests = {t.question_id: t for t in golden_tests(con)}
    contexts: dict[str, list[Context]] = {}
    for qid, cid, text, source in con.execute(
        "SELECT question_id, context_id, text, source FROM subject_contexts WHERE eval_run_id = ? "
        "ORDER BY question_id, rank",
        [eval_run_id],
    ).fetchall():
        contexts.setdefault(qid, []).append(Context(text, cid, source))
    replies = {
        qid: Reply(None, (), error=err)
        for qid, err in con.execute(
            "SELECT question_id, error FROM subject_replies WHERE eval_run_id = ?", [eval_run_id]
        ).fetchall()
    }
    out = {}
    for qid, t in tests.items():
        got = tuple(contexts.get(qid, []))
        ids, how = find_anchor(t, got)
        reason = _reason(how, len(got), replies.get(qid, Reply(None, ())))
        out[qid] = (ids, "unchanged" if ids else "missing", reason or "not looked for: the app's call failed")
    return out


def is_subject_run(con: duckdb.DuckDBPyConnection, eval_run_id: str) -> bool:
    row = con.execute("SELECT subject FROM eval_runs WHERE eval_run_id = ?", [eval_run_id]).fetchone()
    return bool(row and row[0])


def observe_subject(settings: Settings, probes: int = 3) -> Observed:
    """The app under test as it is now (ragpipe.rag.observe), probed with the golden set's first questions."""
    tests = load_golden(settings.golden.path).tests[:probes] if settings.golden.path else []
    subject = load_subject(settings.subject)
    try:
        return observe(subject, [(t.question_id, t.question) for t in tests])
    finally:
        subject.close()

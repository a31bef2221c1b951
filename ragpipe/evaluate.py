"""The evaluation stages over the warehouse: golden set -> stamps -> retrievals -> answers -> verdicts."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import time
from typing import Any, Callable

import duckdb

from ragpipe.core import VERDICTS
from ragpipe.embed import Embedder, ensure_vector_index, load_embedder, open_store, open_table, table_name
from ragpipe.golden import ChunkSpan, GoldenProblem, GoldenSetError, GoldenTest, Restamper, check_quotes, load_golden
from ragpipe.rag import Answer, load_answerer, metrics, retrieve_many
from ragpipe.settings import Settings
from ragpipe.verdicts import decide, settle
from ragpipe.warehouse import ObjectStoreError, insert_rows, transaction

Log = Callable[[str], None]

GOLDEN_COLUMNS = (
    "question_id kind question expected_answer trap_value quote source file_anchor_ids embedder_tag last_validated "
    "line golden_path golden_sha256 run_id"
).split()
ANSWER_COLUMNS = "eval_run_id question_id answer error latency_s input_tokens output_tokens support".split()
VERDICT_COLUMNS = (
    "eval_run_id question_id kind verdict reason anchor_ids anchor_retrieved refused took_trap matched_by unverified "
    "test_embedder_tag judge_reply test_sha source_sha anchor_rank"
).split()


def _noop(msg: str) -> None:
    pass


def documents_text(con: duckdb.DuckDBPyConnection) -> dict[str, str]:
    return dict(con.execute("SELECT doc_id, text FROM documents").fetchall())


def load_golden_stage(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = _noop
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
    with transaction(con):
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
                    str(golden.path),
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


def stamp_stage(settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = _noop) -> dict[str, Any]:
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
            log(f"stamp {s.question_id} ({s.anchor}): {s.status} {s.reason}")
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


def retrieve_stage(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    trigger: str = "manual",
    log: Log = _noop,
    embedder: Embedder | None = None,
) -> dict[str, Any]:
    """Open an eval run: retrieve top-k for every question and store every (question, rank, chunk, score)."""
    emb = embedder or load_embedder(settings.embedder, settings.models_dir)
    tests = golden_tests(con)
    anchors = current_anchors(con, settings.chunker_tag)
    table = open_table(open_store(settings), emb.tag, emb.dims)
    mirrored = con.execute("SELECT count(*) FROM embeddings WHERE embedder_tag = ?", [emb.tag]).fetchone()[0]
    if mirrored and not table.count_rows():
        # The store was moved (a new [warehouse].lancedb_uri) or emptied: the location is not part of any code
        # version, so nothing looks stale; retrieving from an empty table would turn every test into did_not_run.
        raise ObjectStoreError(
            f"the LanceDB table {table_name(emb.tag)} in {settings.lancedb_uri} is empty, but the warehouse "
            f"records {mirrored} vectors under embedder {emb.tag}; run `ragpipe ingest` to embed into this store "
            f"(or copy the old store there)"
        )
    k, mode = settings.retriever.k, settings.retriever.mode
    vector_index = ensure_vector_index(table, settings.retriever.ann_min_rows, log=log)
    questions = [t.question for t in tests]
    vectors = emb.encode(questions) if mode != "fts" and tests else None
    ranked = retrieve_many(table, mode, k, questions, vectors, settings.retriever.nprobes) if tests else []
    results = [(t.question_id, hits) for t, hits in zip(tests, ranked, strict=True)]
    m = metrics(
        [[h.chunk_id for h in hits] for _, hits in results],
        [set(anchors.get(qid, ((), "", ""))[0]) for qid, _ in results],
        k,
    )
    golden_sha, golden_path = con.execute(
        "SELECT any_value(golden_sha256), any_value(golden_path) FROM golden_tests"
    ).fetchone()
    with transaction(con):
        con.execute("DELETE FROM retrievals WHERE eval_run_id = ?", [run_id])
        con.execute("DELETE FROM eval_runs WHERE eval_run_id = ?", [run_id])
        con.execute(
            "INSERT INTO eval_runs (eval_run_id, started_at, chunker_tag, embedder_tag, retriever, golden_sha256, n_tests, "
            "trigger, hit_at_k, mrr, recall_at_k, k, golden_path, corpus_digest) VALUES (?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            [
                run_id,
                settings.chunker_tag,
                emb.tag,
                json.dumps(dataclasses.asdict(settings.retriever)),
                golden_sha or "",
                len(tests),
                trigger,
                m["hit_at_k"],
                m["mrr"],
                m["recall_at_k"],
                k,
                golden_path,
                corpus_digest(con),
            ],
        )
        rows = [[run_id, qid, h.rank, h.chunk_id, h.score] for qid, hits in results for h in hits]
        insert_rows(con, "retrievals", ["eval_run_id", "question_id", "rank", "chunk_id", "score"], rows)
    log(f"retrieved top-{k} ({mode}) for {len(tests)} questions: hit@{k}={m['hit_at_k']:.3f} MRR={m['mrr']:.3f}")
    return {"eval_run_id": run_id, "questions": len(tests), "mode": mode, "vector_index": vector_index, **m}


def corpus_digest(con: duckdb.DuckDBPyConnection) -> str:
    """One hash of every parsed document's id and content hash: equal digests, equal corpus."""
    rows = con.execute("SELECT doc_id, sha256 FROM documents ORDER BY doc_id").fetchall()
    return hashlib.sha256("\n".join(f"{d}\t{h}" for d, h in rows).encode()).hexdigest()[:16]


def test_sha(t: GoldenTest) -> str:
    """The test's own content (not its stamps or validation date): an edit of the golden line changes it."""
    own = [t.kind, t.question, t.expected_answer, t.trap_value, t.quote, t.source]
    return hashlib.sha256(json.dumps(own).encode()).hexdigest()[:16]


def record_failure(con: duckdb.DuckDBPyConnection, run_id: str, asset: str, exc: BaseException) -> None:
    """Keep an evaluation stage's failure in the warehouse (eval_failures), so that `latest_verdicts` and
    `evaluation_status` say the verdicts are older than the last attempt, and why."""
    message = f"{type(exc).__name__}: {exc}"[:4000]
    con.execute("INSERT INTO eval_failures VALUES (?, ?, ?, now())", [run_id, asset, message])


def progress_line(what: str, done: int, total: int, elapsed_s: float, last: str = "") -> str:
    """ "answered 12/43 (neg_12): 61 s elapsed, about 2 min 30 s left" (the rate so far gives the estimate)."""
    left = elapsed_s / done * (total - done) if done else 0.0
    eta = f"{left / 60:.0f} min {left % 60:.0f} s" if left >= 60 else f"{left:.0f} s"
    return f"{what} {done}/{total}{f' ({last})' if last else ''}: {elapsed_s:.0f} s elapsed, about {eta} left"


def _latest(con: duckdb.DuckDBPyConnection, where: str) -> str:
    row = con.execute(f"SELECT eval_run_id FROM eval_runs WHERE {where} ORDER BY started_at DESC LIMIT 1").fetchone()
    if row is None:
        raise RuntimeError("no eval run is ready for this stage; materialize `retrievals` first")
    return row[0]


def _fork(con: duckdb.DuckDBPyConnection, eval_run_id: str, run_id: str, trigger: str, answers: bool) -> str:
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
        con.execute(
            "INSERT INTO retrievals SELECT * REPLACE (? AS eval_run_id) FROM retrievals WHERE eval_run_id = ?",
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


def _judged_elsewhere(con: duckdb.DuckDBPyConnection, eval_run_id: str, run_id: str) -> bool:
    row = con.execute("SELECT verdict_run_id FROM eval_runs WHERE eval_run_id = ?", [eval_run_id]).fetchone()
    return row is not None and row[0] is not None and row[0] != run_id and eval_run_id != run_id


def _public_answerer_settings(settings: Settings) -> str:
    """The answerer's settings as stored: the name of the key's variable, never its value."""
    return json.dumps(dataclasses.asdict(settings.answerer), sort_keys=True)


def answer_stage(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = _noop, trigger: str = "manual"
) -> dict[str, Any]:
    """Answer every question of the latest eval run from its retrieved chunks (a new eval run when that one was
    already judged: the answerer changed, or the nightly run re-answers)."""
    eval_run_id = _latest(con, "TRUE")
    if _judged_elsewhere(con, eval_run_id, run_id):
        eval_run_id = _fork(con, eval_run_id, run_id, trigger, answers=False)
    questions = dict(con.execute("SELECT question_id, question FROM golden_tests").fetchall())
    contexts: dict[str, list[str]] = {qid: [] for qid in questions}
    for qid, text in con.execute(
        "SELECT r.question_id, c.text FROM retrievals r JOIN eval_runs e USING (eval_run_id) "
        "JOIN chunks c ON c.chunk_id = r.chunk_id AND c.chunker_tag = e.chunker_tag "
        "WHERE r.eval_run_id = ? ORDER BY r.question_id, r.rank",
        [eval_run_id],
    ).fetchall():
        if qid in contexts:
            contexts[qid].append(text)
    answerer = load_answerer(settings.answerer)
    qids = sorted(questions)
    t0 = time.perf_counter()
    answers: list[Answer] = []
    step = max(1, getattr(answerer, "progress_step", len(qids) or 1))
    for i in range(0, len(qids), step):
        answers += answerer.answer_all([(questions[q], contexts[q]) for q in qids[i : i + step]])
        if len(answers) < len(qids):
            log(progress_line("answered", len(answers), len(qids), time.perf_counter() - t0, qids[len(answers) - 1]))
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
            [_public_answerer_settings(settings), answerer.label, run_id, eval_run_id],
        )
    errors = sum(a.error is not None for a in answers)
    log(f"answered {len(answers)} questions with {answerer.label} in {secs:.2f} s ({errors} errors)")
    return {
        "eval_run_id": eval_run_id,
        "answerer": answerer.label,
        "answers": len(answers),
        "errors": errors,
        "seconds": round(secs, 3),
        "questions_per_s": round(len(answers) / secs, 2) if secs > 0 else None,
        "input_tokens": sum(a.input_tokens for a in answers),
        "output_tokens": sum(a.output_tokens for a in answers),
    }


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


def verdict_stage(
    settings: Settings, con: duckdb.DuckDBPyConnection, run_id: str, log: Log = _noop, trigger: str = "manual"
) -> dict[str, Any]:
    """Judge every test of the latest answered eval run: pass, fail, did_not_run or error, plus unverified (a new
    eval run when that one was already judged by another run: the judge or the verdict rule changed)."""
    eval_run_id = _latest(con, "answered_run_id IS NOT NULL")
    if _judged_elsewhere(con, eval_run_id, run_id):
        eval_run_id = _fork(con, eval_run_id, run_id, trigger, answers=True)
    run = con.execute("SELECT chunker_tag, embedder_tag FROM eval_runs WHERE eval_run_id = ?", [eval_run_id]).fetchone()
    chunker_tag, embedder_tag = run
    anchors = current_anchors(con, chunker_tag)
    retrieved: dict[str, list[str]] = {}
    for qid, cid in con.execute(
        "SELECT question_id, chunk_id FROM retrievals WHERE eval_run_id = ? ORDER BY question_id, rank", [eval_run_id]
    ).fetchall():
        retrieved.setdefault(qid, []).append(cid)
    answers = {
        r[0]: Answer(r[1], r[3], r[4], r[5], error=r[2])
        for r in con.execute(
            "SELECT question_id, answer, error, latency_s, input_tokens, output_tokens FROM answers WHERE eval_run_id = ?",
            [eval_run_id],
        ).fetchall()
    }
    verdicts = []
    for t in golden_tests(con):
        ids, status, why = anchors.get(t.question_id, ((), "missing", ""))
        ans = answers.get(t.question_id) or Answer("", 0.0, 0, 0, error="no answer recorded for this test")
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
                ),
            )
        )
    replies = {}
    if settings.judge.enabled:
        replies = settle(settings.judge, verdicts, {q: a.text for q, a in answers.items()})
        if replies:
            log(
                f"the judge ({settings.judge.openai.model}) ruled on {len(replies)} answer(s) the rules could not settle"
            )
    verdicts = [(t, replies[t.question_id][0] if t.question_id in replies else v) for t, v in verdicts]
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
    counts = {k: sum(v.verdict == k for _, v in verdicts) for k in VERDICTS}
    counts["unverified"] = sum(v.unverified for _, v in verdicts)
    log("verdicts: " + ", ".join(f"{k}={n}" for k, n in counts.items()))
    return {"eval_run_id": eval_run_id, "tests": len(verdicts), **counts}

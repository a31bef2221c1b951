"""The retrievals stage: an eval run opened, top-k retrieved for every question, with its anchor hit@k and MRR."""

from __future__ import annotations

import dataclasses
import hashlib
import json
from typing import Any

import duckdb

from ragpipe.core import Log, no_log
from ragpipe.embed import Embedder, ensure_vector_index, load_embedder, open_store, open_table, table_name
from ragpipe.evaluate.stamps import current_anchors, golden_tests
from ragpipe.rag import metrics, retrieve_many
from ragpipe.settings import Settings
from ragpipe.warehouse import ObjectStoreError, first, insert_rows, transaction


def retrieve_stage(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    run_id: str,
    trigger: str = "manual",
    log: Log = no_log,
    embedder: Embedder | None = None,
) -> dict[str, Any]:
    """Open an eval run: retrieve top-k for every question and store every (question, rank, chunk, score). With the
    team's app as the subject ([subject].kind http or python), the app is asked instead (ragpipe.evaluate.subject)."""
    if settings.subject.kind != "pipeline":
        from ragpipe.evaluate.subject import subject_retrieve_stage

        return subject_retrieve_stage(settings, con, run_id, trigger, log)
    emb = embedder or load_embedder(settings.embedder, settings.models_dir)
    tests = golden_tests(con)
    anchors = current_anchors(con, settings.chunker_tag)
    table = open_table(open_store(settings), emb.tag, emb.dims)
    mirrored = first(con.execute("SELECT count(*) FROM embeddings WHERE embedder_tag = ?", [emb.tag]))[0]
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
    golden_sha, golden_path = first(
        con.execute("SELECT any_value(golden_sha256), any_value(golden_path) FROM golden_tests")
    )
    with transaction(con):
        con.execute("DELETE FROM retrievals WHERE eval_run_id = ?", [run_id])
        con.execute("DELETE FROM eval_runs WHERE eval_run_id = ?", [run_id])
        con.execute(
            "INSERT INTO eval_runs (eval_run_id, started_at, chunker_tag, embedder_tag, retriever, golden_sha256, n_tests, "
            "trigger, hit_at_k, mrr, recall_at_k, k, golden_path, corpus_digest, metric_tests) "
            "VALUES (?, now(), ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
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
                m["n"],
            ],
        )
        rows = [[run_id, qid, h.rank, h.chunk_id, h.score] for qid, hits in results for h in hits]
        insert_rows(con, "retrievals", ["eval_run_id", "question_id", "rank", "chunk_id", "score"], rows)
    log(
        f"retrieved top-{k} ({mode}) for {len(tests)} questions: hit@{k}={m['hit_at_k']:.3f} MRR={m['mrr']:.3f} "
        f"over the {m['n']} tests with a stamped anchor"
    )
    return {
        "eval_run_id": run_id,
        "questions": len(tests),
        "mode": mode,
        "vector_index": vector_index,
        **{key: v for key, v in m.items() if key != "n"},
        "metrics_over": f"{m['n']} of {len(tests)} tests with a stamped anchor",
    }


def corpus_digest(con: duckdb.DuckDBPyConnection) -> str:
    """One hash of every parsed document's id and content hash: equal digests, equal corpus."""
    rows = con.execute("SELECT doc_id, sha256 FROM documents ORDER BY doc_id").fetchall()
    return hashlib.sha256("\n".join(f"{d}\t{h}" for d, h in rows).encode()).hexdigest()[:16]

"""Proposing tests over the ingested corpus (`ragpipe golden suggest`): near-miss negatives and single-place
positives read from the current chunks, absence shown by an exhaustive search and by the question's own retrieval,
the quote's rank under the current settings; proposals and a person's decisions in golden_suggestions."""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterable

import duckdb

from ragpipe.core import Log, no_log
from ragpipe.embed import Embedder, load_embedder, open_store, open_table
from ragpipe.evaluate.proposing import (
    ONE_OFF,
    TOPIC,
    UNNAMED,
    UNTEMPLATED,
    Proposal,
    SuggestError,
    collect,
    read_corpus,
)
from ragpipe.golden import (
    FALSE_PREMISE,
    QUALIFIER_KINDS,
    Corpus,
    qualifiers,
    remember,
)
from ragpipe.rag import retrieve_many
from ragpipe.settings import Settings
from ragpipe.warehouse import insert_rows, transaction


@dataclass
class Suggestions:
    proposals: list[Proposal]
    dropped: dict[str, int] = field(default_factory=dict)  # why -> how many candidates
    chunks: int = 0
    candidates: int = 0
    seconds: float = 0.0
    embedder_tag: str = ""


COLUMNS = [
    "suggestion_id",
    "kind",
    "qualifier_kind",
    "question",
    "quote",
    "source",
    "value",
    "chunk_id",
    "qualifier",
    "asked_for",
    "evidence",
    "rank",
    "k",
    "chunker_tag",
    "embedder_tag",
]


def _rank(settings: Settings, proposals: list[Proposal], corpus: Corpus, embedder: Embedder | None, log: Log) -> str:
    """Retrieve every question under the current settings: the quote's rank, and the retrieved passages kept as
    evidence. Returns the embedder's tag."""
    emb = embedder or load_embedder(settings.embedder, settings.models_dir)
    table = open_table(open_store(settings), emb.tag, emb.dims)
    k, mode = settings.retriever.k, settings.retriever.mode
    questions = [p.question for p in proposals]
    log(f"retrieving {len(questions)} proposed question(s) under {emb.tag} ({mode}, k={k})")
    vectors = emb.encode(questions) if mode != "fts" and questions else None
    ranked = retrieve_many(table, mode, k, questions, vectors, settings.retriever.nprobes) if questions else []
    for p, hits in zip(proposals, ranked, strict=True):
        ids = [h.chunk_id for h in hits]
        p.k = k
        p.rank = ids.index(p.chunk_id) + 1 if p.chunk_id in ids else None
        p.evidence["retrieved"] = [
            {"rank": i + 1, "chunk_id": cid, "holds_quote": cid == p.chunk_id} for i, cid in enumerate(ids)
        ]
    return emb.tag


def suggest(
    settings: Settings,
    con: duckdb.DuckDBPyConnection,
    negatives: int = 20,
    positives: int = 0,
    kinds: Iterable[str] = QUALIFIER_KINDS,
    taken: Iterable[str] = (),
    embedder: Embedder | None = None,
    log: Log = no_log,
    phrase: bool = False,
) -> Suggestions:
    """Propose up to `negatives` near-miss negatives and `positives` positives over the current chunks (`phrase`: the
    configured model rewords each question), store them (undecided proposals of an earlier run are replaced; decided
    ones stay) and return them, quote in top k first."""
    t0 = time.perf_counter()
    kinds = tuple(kinds)
    unknown = sorted(set(kinds) - {*QUALIFIER_KINDS, FALSE_PREMISE})
    if unknown:
        raise SuggestError(
            f"unknown --kinds {', '.join(unknown)}; choose from {', '.join((*QUALIFIER_KINDS, FALSE_PREMISE))}"
        )
    corpus, notes, n_chunks = read_corpus(con, settings.chunker_tag)
    seen: dict[str, set[str]] = {}
    for s in corpus.searched:
        for q in qualifiers(s.text):
            remember(seen, q)
    dropped: dict[str, int] = dict.fromkeys(
        [
            "negative: every sibling qualifier is answered in the corpus",
            "negative: no sibling",
            ONE_OFF,
            UNTEMPLATED,
            "negative: a retrieved passage may answer it in other words",
            UNNAMED,
            TOPIC,
            "positive: the corpus states another value elsewhere",
        ],
        0,
    )
    decided = {
        r[0] for r in con.execute("SELECT suggestion_id FROM golden_suggestions WHERE decision IS NOT NULL").fetchall()
    }
    spare = negatives + (negatives + 3) // 4  # a retrieved passage may still answer a few: they are dropped below
    neg, pos, traps, n_candidates = collect(corpus, notes, kinds, set(taken), seen, dropped, decided, spare, positives)
    log(
        f"{len(neg)} negative and {len(pos)} positive proposal(s) from {n_candidates} candidate(s) in {n_chunks} chunks"
    )
    proposals = neg + pos
    if phrase and proposals:
        from ragpipe.evaluate.phrasing import rephrase

        rephrase(settings, proposals, log)
    emb_tag = _rank(settings, proposals, corpus, embedder, log) if proposals else ""
    kept_neg = []
    for p in neg:
        retrieved = corpus.neighbours(r["chunk_id"] for r in p.evidence.get("retrieved", []))
        other = corpus.unnamed_answer(traps[p.suggestion_id], retrieved)
        if other:
            dropped["negative: a retrieved passage may answer it in other words"] += 1
        else:
            kept_neg.append(p)
    proposals = kept_neg[:negatives] + pos
    proposals.sort(key=lambda p: (p.kind != "negative", p.rank is None, p.rank or 0, p.suggestion_id))
    _store(con, settings, proposals, emb_tag)
    return Suggestions(proposals, dropped, n_chunks, n_candidates, time.perf_counter() - t0, emb_tag)


def _store(con: duckdb.DuckDBPyConnection, settings: Settings, proposals: list[Proposal], emb_tag: str) -> None:
    with transaction(con):
        con.execute("DELETE FROM golden_suggestions WHERE decision IS NULL")
        rows = [
            [
                p.suggestion_id,
                p.kind,
                p.qualifier_kind,
                p.question,
                p.quote,
                p.source,
                p.value,
                p.chunk_id,
                p.qualifier,
                p.asked_for,
                json.dumps(p.evidence),
                p.rank,
                p.k,
                settings.chunker_tag,
                emb_tag,
            ]  # fmt: skip
            for p in proposals
        ]
        if rows:
            insert_rows(con, "golden_suggestions", COLUMNS, rows, proposed_at="now()")


def stored(con: duckdb.DuckDBPyConnection, ids: Iterable[str] | None = None) -> list[dict[str, Any]]:
    """Proposals as stored (all undecided ones, or those of `ids` in any state), as dicts of their columns."""
    cols = COLUMNS + ["decision", "question_id"]
    sql = f"SELECT {', '.join(cols)} FROM golden_suggestions"
    if ids is None:
        rows = con.execute(sql + " WHERE decision IS NULL ORDER BY kind, rank NULLS LAST, suggestion_id").fetchall()
    else:
        want = list(ids)
        rows = con.execute(sql + " WHERE list_contains(?, suggestion_id)", [want]).fetchall()
        missing = sorted(set(want) - {r[0] for r in rows})
        if missing:
            raise SuggestError(
                f"no proposal {', '.join(missing)} in the warehouse; run `ragpipe golden suggest` and take the ids "
                f"from its review sheet"
            )
    return [dict(zip(cols, r)) for r in rows]


def decide(con: duckdb.DuckDBPyConnection, decisions: dict[str, tuple[str, str | None]]) -> None:
    """Record accepted / rejected (with the test id an accepted proposal got in the golden file)."""
    with transaction(con):
        for sid, (decision, qid) in decisions.items():
            con.execute(
                "UPDATE golden_suggestions SET decision = ?, question_id = ?, decided_at = now() WHERE suggestion_id = ?",
                [decision, qid, sid],
            )

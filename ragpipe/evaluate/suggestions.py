"""Proposing tests over the ingested corpus (`ragpipe golden suggest`): near-miss negatives and single-place
positives read from the current chunks, absence shown by an exhaustive search and by the question's own retrieval,
the quote's rank under the current settings; proposals and a person's decisions in golden_suggestions."""

from __future__ import annotations

import hashlib
import json
import time
from dataclasses import dataclass, field
from typing import Any, Iterable, Iterator

import duckdb

from ragpipe.core import Log, RagpipeError, no_log
from ragpipe.embed import Embedder, load_embedder, open_store, open_table
from ragpipe.golden import (
    FALSE_PREMISE,
    QUALIFIER_KINDS,
    Candidate,
    Corpus,
    Notes,
    SeriesIndex,
    agreeing,
    cadence,
    candidates,
    change_notes,
    change_question,
    change_siblings,
    fair_period,
    forms,
    passages_of,
    qualifiers,
    question,
    remember,
    search_change,
    sentences_of,
    series_index,
    siblings,
    titled_spans,
)
from ragpipe.rag import retrieve_many
from ragpipe.reading import content_words
from ragpipe.settings import Settings
from ragpipe.warehouse import insert_rows, transaction

SIBLINGS_TRIED = 3  # qualifiers tried per trap sentence before it is dropped as answered


class SuggestError(RagpipeError):
    """No chunks to read, or a decision on a proposal that does not exist."""


@dataclass
class Proposal:
    suggestion_id: str
    kind: str  # negative | positive
    qualifier_kind: str  # periods | versions | names | changes | false-premise
    question: str
    quote: str
    source: str
    value: str
    chunk_id: str
    qualifier: str
    asked_for: str
    evidence: dict[str, Any]
    rank: int | None = None  # the quote's chunk in the question's top k (None: not retrieved)
    k: int = 0


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


def _id(kind: str, asked: str, quote: str) -> str:
    return "sug_" + hashlib.sha256(f"{kind}\n{asked}\n{quote}".encode()).hexdigest()[:10]


def read_corpus(con: duckdb.DuckDBPyConnection, chunker_tag: str) -> tuple[Corpus, Notes, int]:
    rows = con.execute(
        "SELECT chunk_id, doc_id, text FROM chunks WHERE chunker_tag = ? ORDER BY doc_id, seq", [chunker_tag]
    ).fetchall()
    if not rows:
        raise SuggestError(f"no chunks under the current chunker {chunker_tag}; run `ragpipe ingest` first")
    documents: dict[str, list[str]] = {}
    for _, doc_id, text in rows:
        documents.setdefault(doc_id, []).append(text)
    sentences = [s for chunk_id, doc_id, text in rows for s in sentences_of(chunk_id, doc_id, text)]
    passages = [s for chunk_id, doc_id, text in rows for s in passages_of(chunk_id, doc_id, text)]
    joined = {d: "\n".join(t) for d, t in documents.items()}
    return Corpus(sentences, joined, passages), change_notes(rows), len(rows)


def _pool(corpus: Corpus, notes: Notes, kinds: Iterable[str], taken: set[str]) -> dict[str, list[Candidate]]:
    """Candidates by document (a document's change notes after its values); a quote already in the golden set is
    left out. False-premise questions move periods: they read the period candidates."""
    groups = (*kinds, "periods") if FALSE_PREMISE in kinds else tuple(kinds)
    by_doc: dict[str, list[Candidate]] = {}
    for s in corpus.sentences:
        if s.text not in taken:
            period = corpus.periods.get(s.doc_id)
            titled = titled_spans(s.text, period) if period and "periods" in groups else []
            by_doc.setdefault(s.doc_id, []).extend(candidates(s, groups, titled))
    for c in notes.candidates if "changes" in kinds else []:
        if c.sentence.text not in taken:
            by_doc.setdefault(c.sentence.doc_id, []).append(c)
    return by_doc


def _round_robin(by_doc: dict[str, list[Candidate]]) -> Iterator[Candidate]:
    """Candidates a document at a time in turn, so that the proposals spread over the corpus."""
    queues = [iter(v) for _, v in sorted(by_doc.items())]
    while queues:
        for q in list(queues):
            c = next(q, None)
            if c is None:
                queues.remove(q)
            else:
                yield c


UNNAMED = "negative: the question does not name what its document is about (an article's title)"
ONE_OFF = "negative: a one-off statement, no series in the corpus (--kinds false-premise proposes it)"
FAIR = {
    "versions": "a version recurs: the same statement asked of another release",
    "names": "another name of the same pattern the corpus holds",
    "changes": "a change note asked about a version its subject has no note for",
}


def _fairness(c: Candidate, index: SeriesIndex, kinds: tuple[str, ...]) -> tuple[str, str]:
    """(the proposal's kind, why it is fair), or ('', '') when it is not proposed: a period is moved only along a
    series, or as a false premise when those are asked for."""
    if c.qualifier.group != "periods":
        return c.qualifier.group, FAIR[c.qualifier.group]
    fair = fair_period(c, index)
    if fair and "periods" in kinds:
        return "periods", fair
    if not fair and FALSE_PREMISE in kinds:
        return FALSE_PREMISE, (
            "a one-off statement asked of another period: the premise is false, and the pass is an answer that says "
            f"so (a refusal citing {c.qualifier.text!r})"
        )
    return "", ""


def _negative(
    c: Candidate,
    corpus: Corpus,
    notes: Notes,
    seen: dict[str, set[str]],
    dropped: dict[str, int],
    fairness: tuple[str, str],
    step: int = 1,
) -> Proposal | None:
    """The first sibling qualifier whose question the corpus does not answer; None when every one is answered. A
    change note is asked about another version of its subject, a value under another qualifier."""
    kind, fair = fairness
    if not kind:
        dropped[ONE_OFF] += 1
        return None
    doc = c.sentence.doc_id
    about = content_words(corpus.titles.get(doc, "")) if doc not in corpus.periods and kind != "changes" else set()
    if about and not about & content_words(question(c)):  # "the 2024 edition" of which festival?
        dropped[UNNAMED] += 1
        return None
    change = c.qualifier.group == "changes"
    if change:
        sibs = change_siblings(c, notes, {v for k, vs in seen.items() if k.startswith("version:") for v in vs})
    else:
        sibs = siblings(c.qualifier, seen, step)
    tried = []
    for sib in sibs[:SIBLINGS_TRIED]:
        ev = search_change(c, sib, notes, corpus.searched) if change else corpus.search(c, sib)
        tried.append({"qualifier": sib, "pattern": ev.pattern, "answered_by": ev.answered_by and ev.answered_by[1]})
        if ev.absent:
            asked = change_question(c, sib) if change else question(c, sib)
            evidence = {
                "search": f"every sentence of {len(corpus.documents)} documents for {sib!r} (pattern {ev.pattern})",
                "naming": ev.naming,
                "why": ev.why(sib),
                "closest": [{"chunk_id": cid, "sentence": text, "share": round(sh, 2)} for cid, text, sh in ev.closest],
                "tried": tried[:-1],
                "fair": fair,
            }
            return Proposal(
                _id("negative", asked, c.sentence.text), "negative", kind, asked, c.sentence.text,
                c.sentence.doc_id, c.value.text, c.sentence.chunk_id, c.qualifier.text, sib, evidence,
            )  # fmt: skip
    dropped["negative: every sibling qualifier is answered in the corpus" if tried else "negative: no sibling"] += 1
    return None


def _positive(c: Candidate, corpus: Corpus, dropped: dict[str, int]) -> Proposal | None:
    ok, others = agreeing(c, corpus)
    if not ok:
        dropped["positive: the corpus states another value elsewhere"] += 1
        return None
    asked = question(c)
    evidence = {"search": f"every sentence under {c.qualifier.text!r}", "why": "no other place states another value"}
    return Proposal(
        _id("positive", asked, c.sentence.text), "positive", c.qualifier.group, asked, c.sentence.text,
        c.sentence.doc_id, c.value.text, c.sentence.chunk_id, c.qualifier.text, c.qualifier.text, evidence,
    )  # fmt: skip


def _collect(
    corpus: Corpus,
    notes: Notes,
    kinds: tuple[str, ...],
    taken: set[str],
    seen: dict[str, set[str]],
    dropped: dict[str, int],
    decided: set[str],
    negatives: int,
    positives: int,
) -> tuple[list[Proposal], list[Proposal], dict[str, Candidate], int]:
    """Candidates in turn until there are enough proposals: a sentence (the notes of a changed thing, together)
    gives at most one negative and one positive, a question is asked once, a change note no positive (its value is a
    paraphrase to read, not a value to find), and a decided (accepted or rejected) proposal is never made again."""
    neg: list[Proposal] = []
    pos: list[Proposal] = []
    traps: dict[str, Candidate] = {}
    used: set[tuple[str, str]] = set()
    asked: set[Any] = set()  # (the asked period's pattern, the attribute): the same question in other words
    n = 0
    pool = _pool(corpus, notes, kinds, taken)
    index = series_index(corpus.searched, corpus.periods)
    for c in _round_robin(pool):
        if len(neg) >= negatives and len(pos) >= positives:
            break
        n += 1
        if len(neg) < negatives and ("n", c.subject or c.sentence.text) not in used:
            p = _negative(c, corpus, notes, seen, dropped, _fairness(c, index, kinds), cadence(c, index))
            same = (forms(p.asked_for, c.qualifier.kind).pattern, c.attribute - content_words(p.asked_for)) if p else ()
            if p and p.suggestion_id not in decided and same not in asked:  # "Q3 2024" and "third quarter of 2024"
                asked.add(same)
                neg.append(p)
                traps[p.suggestion_id] = c
                used.add(("n", c.subject or c.sentence.text))
                continue
        if len(pos) < positives and not c.subject and ("p", c.sentence.text) not in used:
            p = _positive(c, corpus, dropped)
            if p and p.suggestion_id not in decided:
                pos.append(p)
                used.add(("p", c.sentence.text))
    return neg, pos, traps, n


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
            "negative: a retrieved passage may answer it in other words",
            UNNAMED,
            "positive: the corpus states another value elsewhere",
        ],
        0,
    )
    decided = {
        r[0] for r in con.execute("SELECT suggestion_id FROM golden_suggestions WHERE decision IS NOT NULL").fetchall()
    }
    spare = negatives + (negatives + 3) // 4  # a retrieved passage may still answer a few: they are dropped below
    neg, pos, traps, n_candidates = _collect(corpus, notes, kinds, set(taken), seen, dropped, decided, spare, positives)
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

"""Proposals read from the ingested corpus: near-miss negatives and single-place positives, each candidate sentence's
question, why moving its qualifier is fair, and the exhaustive search that shows the new question unanswered
(`ragpipe golden suggest`'s reading half; suggestions.py retrieves, stores and decides)."""

from __future__ import annotations

import datetime
import hashlib
import re
from dataclasses import dataclass, replace
from typing import Any, Iterable, Iterator

import duckdb

from ragpipe.core import RagpipeError
from ragpipe.golden import (
    FALSE_PREMISE,
    TEMPLATES,
    YEAR,
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
    question,
    row_candidates,
    row_question,
    search_change,
    sentences_of,
    series_index,
    siblings,
    tables_of,
    template,
    titled_spans,
)
from ragpipe.reading import content_words

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


def _id(kind: str, asked: str, quote: str) -> str:
    return "sug_" + hashlib.sha256(f"{kind}\n{asked}\n{quote}".encode()).hexdigest()[:10]


def read_corpus(con: duckdb.DuckDBPyConnection, chunker_tag: str) -> tuple[Corpus, Notes, int]:
    rows = con.execute(
        "SELECT chunk_id, doc_id, text FROM chunks WHERE chunker_tag = ? ORDER BY doc_id, seq", [chunker_tag]
    ).fetchall()
    if not rows:
        raise SuggestError(f"no chunks under the current chunker {chunker_tag}; run `ragpipe ingest` first")
    chunks: dict[str, list[tuple[str, str]]] = {}  # doc id -> its chunks (id, text) in order
    for chunk_id, doc_id, text in rows:
        chunks.setdefault(doc_id, []).append((chunk_id, text))
    sentences = [s for chunk_id, doc_id, text in rows for s in sentences_of(chunk_id, doc_id, text)]
    passages = [s for chunk_id, doc_id, text in rows for s in passages_of(chunk_id, doc_id, text)]
    corpus = Corpus(sentences, {d: "\n".join(t for _, t in cs) for d, cs in chunks.items()}, passages)
    tables = [t for doc_id, elements in _parsed(con, chunker_tag) for t in tables_of(doc_id, elements)]
    corpus.rows = row_candidates(tables, chunks, corpus.titles)
    return corpus, change_notes(rows), len(rows)


def _parsed(con: duckdb.DuckDBPyConnection, chunker_tag: str) -> list[tuple[str, str]]:
    """Each chunked document's parse (its elements, where tables keep their cells); none in a warehouse that holds
    chunks alone."""
    kept = con.execute("SELECT count(*) FROM information_schema.tables WHERE table_name = 'documents'").fetchone()
    if not kept or not kept[0]:
        return []
    return con.execute(
        "SELECT doc_id, elements_json FROM main.documents WHERE doc_id IN (SELECT DISTINCT doc_id FROM chunks "
        "WHERE chunker_tag = ?) ORDER BY doc_id",
        [chunker_tag],
    ).fetchall()


def _pool(corpus: Corpus, notes: Notes, kinds: Iterable[str], taken: set[str]) -> dict[str, list[Candidate]]:
    """Candidates by document (a document's change notes after its values); a quote already in the golden set is
    left out. False-premise questions move periods: they read the period candidates."""
    groups = (*kinds, "periods") if FALSE_PREMISE in kinds else tuple(kinds)
    by_doc: dict[str, list[Candidate]] = {}
    for s in corpus.sentences:
        if s.text not in taken:
            period = corpus.titled(s.doc_id)
            titled = titled_spans(s.text, period) if period and "periods" in groups else []
            by_doc.setdefault(s.doc_id, []).extend(candidates(s, groups, titled))
    for c in corpus.rows if "periods" in kinds else []:  # a table's rows, asked by a template
        if c.sentence.text not in taken:
            by_doc.setdefault(c.sentence.doc_id, []).append(c)
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
TOPIC = 'negative: the article\'s title names a topic, not what a figure is of ("Tourism in ...")'
ONE_OFF = "negative: a one-off statement, no series in the corpus (--kinds false-premise proposes it)"
UNTEMPLATED = "negative: a sentence no template asks (what a measure was, what was done, what an organisation did)"
FAIR = {
    "versions": "a version recurs: the same statement asked of another release",
    "names": "another name of the same pattern the corpus holds",
    "changes": "a change note asked about a version its subject has no note for",
}


def _fairness(c: Candidate, index: SeriesIndex, kinds: tuple[str, ...]) -> tuple[str, str]:
    """(the proposal's kind, why it is fair), or ('', why it is not proposed): a period is moved only along a series
    and, in prose, only where a template asks the sentence (a table's row is asked by its own); a one-off statement
    only as a false premise, when those are asked for."""
    if c.qualifier.group != "periods":
        return c.qualifier.group, FAIR[c.qualifier.group]
    if c.label:  # a table's row (proposed only where periods are asked for): the table shows the series
        return "periods", f"a series: a table states {c.label!r} for {', '.join(map(repr, c.columns))}"
    fair = fair_period(c, index)
    if fair and "periods" in kinds:
        shape = template(c.sentence.text, (c.value.start, c.value.end))
        return ("periods", f"{fair}; asked as {TEMPLATES[shape]!r}") if shape else ("", UNTEMPLATED)
    if not fair and FALSE_PREMISE in kinds:
        return FALSE_PREMISE, (
            "a one-off statement asked of another period: the premise is false, and the pass is an answer that says "
            f"so (a refusal citing {c.qualifier.text!r})"
        )
    return "", ONE_OFF


def _to_come(qualifier: str, group: str) -> bool:
    """A period that begins after this year, or this year itself: no document could state it yet, and nobody asks a
    corpus for it ("In 2031, what was the population of ...?")."""
    first = re.search(YEAR, qualifier) if group == "periods" else None
    this = datetime.date.today().year
    return first is not None and (int(first.group(0)) > this or qualifier.strip() == str(this))


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
        dropped[fair] += 1
        return None
    doc = c.sentence.doc_id
    about = content_words(corpus.titles.get(doc, "")) if doc not in corpus.periods and kind != "changes" else set()
    if about and not about & c.attribute:  # "the 2024 edition" of which festival? (the question's words)
        dropped[UNNAMED] += 1
        return None
    if c.of and corpus.topic(c.of):  # "how many arrivals did Tourism in Santa Irene have?"
        dropped[TOPIC] += 1
        return None
    change = c.qualifier.group == "changes"
    if change:
        sibs = change_siblings(c, notes, {v for k, vs in seen.items() if k.startswith("version:") for v in vs})
    else:
        sibs = [  # a table's row is never asked of a period its own table states ("| 2022 | 4 | 149,000 |")
            q for q in siblings(c.qualifier, seen, step) if not _to_come(q, c.qualifier.group) and q not in c.columns
        ]
    tried = []
    for sib in sibs[:SIBLINGS_TRIED]:
        ev = search_change(c, sib, notes, corpus.searched) if change else corpus.search(c, sib)
        tried.append({"qualifier": sib, "pattern": ev.pattern, "answered_by": ev.answered_by and ev.answered_by[1]})
        if ev.absent:
            if change:
                asked = change_question(c, sib)
            elif c.label:
                asked = row_question(replace(c, of=corpus.as_written(c.of)), sib, corpus.written_as_name(c.label))
            else:
                asked = corpus.common_case(question(c, sib))
            if not asked:  # the parse gives no question of this period ("how much do ... cost in 2019/20?")
                continue
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


def collect(
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
        key = c.subject or ("measure:" + c.label.lower() if c.label else c.sentence.text)  # a measure asked once
        if len(neg) < negatives and ("n", key) not in used:
            p = _negative(c, corpus, notes, seen, dropped, _fairness(c, index, kinds), cadence(c, index))
            same = (forms(p.asked_for, c.qualifier.kind).pattern, c.attribute - content_words(p.asked_for)) if p else ()
            if p and p.suggestion_id not in decided and same not in asked:  # "Q3 2024" and "third quarter of 2024"
                asked.add(same)
                neg.append(p)
                traps[p.suggestion_id] = c
                used.add(("n", key))
                continue
        if len(pos) < positives and not c.subject and not c.label and ("p", c.sentence.text) not in used:
            p = _positive(c, corpus, dropped)
            if p and p.suggestion_id not in decided:
                pos.append(p)
                used.add(("p", c.sentence.text))
    return neg, pos, traps, n

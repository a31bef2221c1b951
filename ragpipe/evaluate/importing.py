"""`ragpipe golden import`: another tool's tests made ragpipe tests over the ingested corpus. A test whose expected
answer refuses (the refusal grammar), or that the tool marks as expecting a refusal, is a negative; the others are
positives. Each is anchored in the current chunks:

- a positive's evidence: the sentence of its reference contexts that states the expected answer, found in the corpus
  by the restamper's quote search (markup and typography aside); without contexts, the corpus sentence that states the
  expected answer and shares most words with the question;
- a negative's trap, proposed the way `golden suggest` reads one: the corpus sentence stating a value (an amount, a
  count, a date, a name) that shares most of the question's words, weighted by how rare they are; its reference
  context's sentence first when it has one.

A test that cannot be anchored is not imported, and says why, with the closest passage when there is one.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any

from ragpipe.golden import Corpus, Restamper, Row, closest_passage, golden_object, names, qualifiers, values
from ragpipe.reading import answer_matches, content_words, is_refusal

TRAP_SHARE = 0.4  # of the question's word weight a proposed trap must hold
SAME_PASSAGE = 0.5  # of a context sentence's words a corpus sentence must hold to stand for it
QUESTION_SHARE = 0.3  # of the question's words the sentence stating the answer must hold (a test with no context)
_SPLIT = re.compile(r"(?<=[.!?])\s+|\n+")


@dataclass
class Imported:
    row: Row
    test: dict[str, Any] | None  # the golden test as the file will hold it, without its question_id yet
    kind: str
    note: str  # where its anchor was found, or why it was not imported


def _pieces(contexts: list[str]) -> list[str]:
    return [p.strip() for c in contexts for p in _SPLIT.split(c) if len(p.strip()) >= 12]


def _weight(words: set[str] | frozenset[str], corpus: Corpus) -> dict[str, float]:
    n = max(1, len(corpus.sentences))
    return {w: math.log(1 + n / (1 + corpus.df.get(w, 0))) for w in words}


def _located(stamper: Restamper, text: str) -> tuple[str, str, str] | None:
    """(quote as the corpus has it, document, chunk id) of a text found verbatim (markup aside) in the corpus."""
    found = stamper.locate(text, None)
    if found is None:
        return None
    doc, start, end = found
    chunks = stamper.covering_chunks(doc, start, end)
    return stamper.documents[doc][start:end], doc, chunks[0] if len(chunks) == 1 else ",".join(chunks)


def _positive(row: Row, corpus: Corpus, stamper: Restamper) -> tuple[dict[str, Any] | None, str]:
    pieces = _pieces(row.contexts)
    states = [p for p in pieces if answer_matches(p, row.expected, row.question).matched]
    for piece in states:
        got = _located(stamper, piece)
        if got:
            quote, doc, chunk = got
            return golden_object("", "positive", row.question, quote, doc, row.expected, chunk, "", ""), (
                f"evidence from its reference context, in {doc}"
            )
    # the corpus sentence stating the expected answer that is most like the context (else the question)
    refs = [content_words(p) for p in (states or pieces)] or [content_words(row.question)]
    pool = [s for s in corpus.sentences if answer_matches(s.text, row.expected, row.question).matched]
    scored = sorted(((max(len(r & s.words) / max(1, len(r)) for r in refs), s) for s in pool), key=lambda x: -x[0])
    if scored and scored[0][0] >= (SAME_PASSAGE if pieces else QUESTION_SHARE):
        share, best = scored[0]
        how = f"{share:.0%} of the words of its reference context" if pieces else f"{share:.0%} of the question's words"
        obj = golden_object("", "positive", row.question, best.text, best.doc_id, row.expected, best.chunk_id, "", "")
        return obj, f"evidence: the sentence of {best.doc_id} stating the expected answer, with {how}"
    where = ""
    if row.contexts:
        ctx = content_words(row.contexts[0])
        docs = sorted(corpus.documents, key=lambda d: -len(ctx & content_words(corpus.documents[d][:4000])))
        near = [(p, d) for d in docs[:3] if (p := closest_passage(row.contexts[0], corpus.documents[d], 0.3))]
        if near:
            (passage, ratio), doc = max(near, key=lambda x: x[0][1])
            where = f"; closest passage ({ratio:.2f}) in {doc}: {passage[:160]!r}"
    said = "its reference context is not in the corpus, and no sentence like it states" if pieces else (
        "no sentence of the corpus about the question states")  # fmt: skip
    return None, f"not imported: {said} {row.expected!r}{where}; add evidence_quote by hand"


def _negative(row: Row, corpus: Corpus, stamper: Restamper) -> tuple[dict[str, Any] | None, str]:
    question = frozenset(content_words(row.question))
    weights = _weight(question, corpus)
    total = sum(weights.values()) or 1.0
    for piece in sorted(_pieces(row.contexts), key=lambda p: -len(question & content_words(p))):
        got = _located(stamper, piece)
        if got:
            quote, doc, chunk = got
            obj = golden_object("", "negative", row.question, quote, doc, "", chunk, "", "")
            return obj, f"trap from its reference context, in {doc}"
    scored = sorted(
        ((sum(weights[w] for w in question & s.words) / total, s) for s in corpus.sentences if question & s.words),
        key=lambda x: -x[0],
    )
    for share, s in scored[:50]:
        if share < TRAP_SHARE:
            break
        if values(s.text, qualifiers(s.text)) or names(s.text, qualifiers(s.text)):  # a value a question asks for
            obj = golden_object("", "negative", row.question, s.text, s.doc_id, "", s.chunk_id, "", "")
            return obj, f"trap proposed (review it): holds {share:.0%} of the question's word weight, in {s.doc_id}"
    return None, (
        "not imported: no corpus sentence stating a value shares enough of the question to tempt "
        f"(best {scored[0][0]:.0%} of its word weight)"
        if scored
        else "not imported: no corpus sentence shares a word with the question"
    ) + "; add trap_quote by hand"


def anchor(rows: list[Row], corpus: Corpus, stamper: Restamper) -> list[Imported]:
    """Each row as a ragpipe test anchored in the corpus, or the reason it is not."""
    out = []
    for row in rows:
        negative = row.refusal or is_refusal(row.expected)
        kind = "negative" if negative else "positive"
        test, note = (_negative if negative else _positive)(row, corpus, stamper)
        if test is not None:
            test = {k: v for k, v in test.items() if v not in (None, "")}
            test["expected_answer"] = row.expected if not negative or is_refusal(row.expected) else "not in documents"
            if "," in str(test.get(f"{'trap' if negative else 'evidence'}_chunk_id", "")):
                field = f"{'trap' if negative else 'evidence'}_chunk_id"
                test[field] = test[field].split(",")
        out.append(Imported(row, test, kind, note))
    return out

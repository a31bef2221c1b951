"""What a value is said of in the retrieved text. A clause restates the sentence of the retrieved text with which
it shares the most words; a number the clause gives that this sentence does not, where that sentence gives another
of its kind and the retrieved text holds the clause's number elsewhere, was taken from another statement: "it was
founded in 1999" where the text says "founded in 1816" and "opened on 15 December 1999"; "marched from Fort
Venango on April 16" where it says "led 500 men south from Fort Venango on April 5" and "arrived at the fort on
April 16". A number the retrieved text does not hold at all is ungrounded (ragpipe.reading.grounding), not swapped.
"""

from __future__ import annotations

import functools
import re

from spacy.lang.en.stop_words import STOP_WORDS

from ragpipe.reading.grounding import Grounds, facts, grounds, in_clause
from ragpipe.reading.match import digits, numbers
from ragpipe.reading.polarity import _LIGHT, _WORD, sentences, stem

_WHOLE = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")  # whole numbers as written: not decimals, notations or ranges
_WORKING = re.compile(r"\d\s*[x\u00d7*+=/]\s*\d|\|")  # arithmetic ("6 x 3 = 18") or a table row: not a claim


def _same(x: float, y: float) -> bool:
    return abs(x - y) <= 1e-9 * max(1.0, abs(x))


def _has(values: frozenset[float] | set[float], v: float) -> bool:
    return any(_same(v, w) for w in values)


def _kind(v: float) -> str:
    return "year" if v.is_integer() and 1000 <= v <= 2100 else "number"


@functools.lru_cache(maxsize=4096)
def _values(sentence: str) -> frozenset[float]:
    return grounds((sentence,), "").values


def _words(text: str) -> set[str]:
    return {stem(w) for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in STOP_WORDS} - _LIGHT


def _numbers(answer: str, clause: str, skip: set[float]) -> list[float]:
    """The whole numbers the clause states, in digits as the answer wrote them, that `skip` does not hold."""
    mine = [
        float(f.text.replace(",", ""))
        for f in facts(answer)
        if f.kind == "number" and _WHOLE.fullmatch(f.text) and in_clause(f.text, clause)
    ]
    return [v for v in mine if not _has(skip, v)]


def _restated(clause: str, before: str, passages: Grounds) -> list[str]:
    """The sentences of the retrieved text the clause restates: those sharing the most of its words (two at
    least); a clause too short to say what it is about is read with the clause before it."""
    words = _words(clause) if len(_words(clause)) >= 2 else _words(f"{before} {clause}")
    scored = [(len(words & set(stems)), sentence) for sentence, _, stems in sentences(passages.text)]
    best = max((n for n, _ in scored), default=0)
    return [s for n, s in scored if n == best] if best >= 2 else []


def swapped(answer: str, clause: str, before: str, passages: Grounds, question: str, expected: str) -> str | None:
    """The clause's number and the retrieved sentence it was taken from ("1999, where the retrieved text says 1816:
    ..."), or None. `before`: the clause before this one; `passages`: the retrieved texts alone (the question is no
    statement); the expected answer's own numbers and the question's are not checked here."""
    if not passages.known or _WORKING.search(clause):
        return None
    skip = set(numbers(digits(question))) | set(numbers(digits(expected)))
    mine = [v for v in _numbers(answer, clause, skip) if _has(passages.values, v)]
    if not mine or len(mine) >= 4:  # a list of numbers is data, not a statement about one thing
        return None
    restated = _restated(clause, before, passages)
    told = set(numbers(digits(answer)))
    for v in mine:
        if not restated or any(_has(_values(s), v) for s in restated):
            continue
        rivals = [[w for w in sorted(_values(s)) if _kind(w) == _kind(v) and not _has(told, w)] for s in restated]
        if all(rivals):
            return f"{v:g}, where the retrieved text says {rivals[0][0]:g}: {restated[0][:120]!r}"
    return None

"""What a value is said of in the retrieved text. A clause restates the sentence of the retrieved text with which
it shares the most words; a number the clause gives that this sentence does not, where that sentence gives another
of its kind and the retrieved text holds the clause's number elsewhere, was taken from another statement: "it was
founded in 1999" where the text says "founded in 1816" and "opened on 15 December 1999"; "marched from Fort
Venango on April 16" where it says "led 500 men south from Fort Venango on April 5" and "arrived at the fort on
April 16". Names work alike ("500 men under Jumonville" where the sentence says "Contrecœur led 500 men"), and code
that gives a parameter a value the text gives only another parameter (`abs_tol=1e-09` beside "abs_tol=0.0"). A
clause that restates a sentence with its numbers reports the text (`said_there`). A number the retrieved text does
not hold at all is ungrounded (ragpipe.reading.grounding), not swapped.
"""

from __future__ import annotations

import functools
import math
import re

from ragpipe.reading.grounding import Grounds, _key, facts, grounds, in_clause, table_row
from ragpipe.reading.match import _same, digits, numbers
from ragpipe.reading.polarity import _LIGHT, _WORD, predicates, sentences, stem

_WHOLE = re.compile(r"\d{1,3}(?:,\d{3})+|\d+")  # whole numbers as written: not decimals, notations or ranges
_WORKING = re.compile(r"\d\s*[x\u00d7*+=/]\s*\d")  # arithmetic ("6 x 3 = 18"): working, not a claim


def _has(values: frozenset[float] | set[float], v: float) -> bool:
    return any(_same(v, w) for w in values)


def _kind(v: float) -> str:
    return "year" if v.is_integer() and 1000 <= v <= 2100 else "number"


@functools.lru_cache(maxsize=4096)
def _values(sentence: str) -> frozenset[float]:
    return grounds((sentence,), "").values


def _words(text: str) -> set[str]:
    stop = _stop_words()
    return {stem(w) for w in _WORD.findall(text.lower()) if len(w) > 2 and w not in stop} - _LIGHT


@functools.cache
def _stop_words() -> frozenset[str]:
    """spaCy's English stop words, imported when a verdict first needs them (spaCy takes seconds to import: a
    command that only needs this module's code version must not pay for it)."""
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


def _numbers(answer: str, clause: str, skip: set[float]) -> list[float]:
    """The whole numbers the clause states (in digits, or a number word that counts: "six clusters"), not in
    `skip`."""
    mine = []
    for f in facts(answer):
        if f.kind == "number" and in_clause(f.text, clause) and not _aside(answer, f.start):
            if _WHOLE.fullmatch(f.text):
                mine.append(float(f.text.replace(",", "")))
            elif f.text.isalpha():
                mine.extend(numbers(digits(f.text))[:1])
    return [v for v in mine if not _has(skip, v)]


def _aside(answer: str, start: int) -> bool:
    """Is the answer's character at `start` in a table row or inside parentheses (a gloss, an aside)?"""
    line = answer[answer.rfind("\n", 0, start) + 1 : start]
    return table_row(answer, start) or line.count("(") > line.count(")")


def _keys(text: str) -> set[str]:
    return {_key(w) for w in re.findall(r"[\w\u00c0-\u024f'-]+", text)}


def _restated(clause: str, before: str, passages: Grounds) -> list[str]:
    """The sentences of the retrieved text the clause restates: those sharing the most of its words (two at
    least); a clause too short to say what it is about is read with the clause before it."""
    words = _words(clause) if len(_words(clause)) >= 2 else _words(f"{before} {clause}")
    scored = [(len(words & set(stems)), sentence) for sentence, _, stems in sentences(passages.text)]
    best = max((n for n, _ in scored), default=0)
    return [s for n, s in scored if n == best] if best >= 2 else []


def _predicated(clause: str, passages: Grounds) -> list[str]:
    """The sentences of the retrieved text that have the clause's verb and another of its words ("founded" and
    "library" for "the library was founded in 1999")."""
    words = _words(clause)
    verbs = {stem(p) for p, _ in predicates(clause)} & words
    return [
        s for s, _, stems in sentences(passages.text) if verbs & set(stems) and len(words & set(stems) - verbs) >= 1
    ]


_ASSIGNED = re.compile(r"([A-Za-z_][\w.]*)\s*=\s*([\w.+\-]+)")


def _same_value(a: str, b: str) -> bool:
    try:
        return math.isclose(float(a), float(b), rel_tol=1e-9)  # 1e-09 is not 0.0
    except ValueError:
        return a.lower() == b.lower()


def reassigned(answer: str, passages: Grounds) -> str | None:
    """Code in the answer that gives a name a value ("`abs_tol=1e-09`") where the retrieved text gives that name
    only other values ("abs_tol=0.0"): the value of another parameter, or None."""
    for f in facts(answer):
        if f.kind != "code":
            continue
        for name, value in _ASSIGNED.findall(f.text):
            there = [v for n, v in _ASSIGNED.findall(passages.text) if n == name.lower()]
            if there and not any(_same_value(value, v) for v in there):
                return f"`{name}={value}`, where the retrieved text has `{name}={there[0]}`"
    return None


def said_there(answer: str, clause: str, passages: Grounds) -> bool:
    """Does the clause restate a sentence of the retrieved text that holds each of its numbers, all whole ("The
    first exchange was established in 1817" where the text says so)? Then it reports the text, whatever it is
    about."""
    written = [f.text for f in facts(answer) if f.kind == "number" and in_clause(f.text, clause)]
    if any(not _WHOLE.fullmatch(w) and not w.isalpha() for w in written):
        # a decimal or a version ("is 2.0") is read as written, not as a whole number: in a sentence it restates
        restated = _restated(clause, "", passages) if passages.known else []
        return bool(restated) and all(
            re.search(rf"(?<![\w.]){re.escape(w.lower())}(?![\w])", s) for w in written for s in restated[:1]
        )
    mine = _numbers(answer, clause, set())
    restated = _restated(clause, "", passages) if mine and passages.known else []
    return bool(restated) and all(any(_has(_values(s), v) for s in restated) for v in mine)


def swapped(answer: str, clause: str, before: str, passages: Grounds, question: str, expected: str) -> str | None:
    """The clause's number or name and the retrieved sentence it was taken from ("1999, where the retrieved text
    says 1816: ...", "Newton, where the retrieved text names cavendish: ..."), or None. `before`: the clause before
    this one; `passages`: the retrieved texts alone (the question is no statement); the expected answer's own
    numbers and names and the question's are not checked here."""
    if not passages.known or _WORKING.search(clause):
        return None
    skip = set(numbers(digits(question))) | set(numbers(digits(expected)))
    mine = [v for v in _numbers(answer, clause, skip) if _has(passages.values, v)]
    asked = _keys(question) | _keys(expected)
    names = [
        f.text
        for f in facts(answer)
        if f.kind == "name"
        and in_clause(f.text, clause)
        and _key(f.text) in passages.names - asked
        and not _aside(answer, f.start)
    ]
    if not (mine or names) or len(mine) >= 4:  # a list of numbers is data, not a statement about one thing
        return None
    restated = _restated(clause, before, passages)
    if not restated:
        return None
    told = set(numbers(digits(answer)))
    predicated = _predicated(clause, passages) if mine else []
    for v in mine:
        for said in (restated, predicated):
            if not said or any(_has(_values(s), v) for s in said):
                continue
            rivals = [[w for w in sorted(_values(s)) if _kind(w) == _kind(v) and not _has(told, w)] for s in said]
            if all(rivals):
                return f"{v:g}, where the retrieved text says {rivals[0][0]:g}: {said[0][:120]!r}"
    known = _keys(answer) | asked
    for name in names:
        if any(_key(name) in _keys(s) for s in restated):
            continue
        rival_names = [sorted((_keys(s) & passages.names) - known) for s in restated]
        if all(rival_names):
            return f"{name}, where the retrieved text names {rival_names[0][0]}: {restated[0][:120]!r}"
    return None

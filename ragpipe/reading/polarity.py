"""Whether a clause says the opposite of the retrieved text: the same predicate, about the same things, with the
other polarity. "Note that HTTPX also follows redirects by default" beside "By default, HTTPX will **not** follow
redirects" is opposed; so is "2.x versions are not backwards-compatible" beside "Versions in the 2.x series will be
backwards-compatible". A value may be right while the claim made with it is not.
"""

from __future__ import annotations

import functools
import re

from ragpipe.reading.grounding import Grounds, parse

# A suffix comes before its own tail ("ings" before "ing" and "s").
_SUFFIXES = tuple("ations ation ings ing ments ment ness edly ies ied ers er est ed es ly s e".split())
_NEGATORS = {"not", "never", "no", "n't", "cannot", "nor", "neither"}
_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+|\s#+\s")
_WORD = re.compile(r"[a-z][a-z0-9']*|n't")
_IDENTIFIER = re.compile(r"[\w.]*\w(?:_|::|\.(?=\w)|=)[\w.:=]*")
_FRAMING = {"note", "remember", "say", "mention", "state", "keep", "bear", "notice", "know", "see"}
_LIGHT_VERBS = set("have has had having need needs make makes get gets take takes give".split())
_LIGHT = set("not note each other also the and for with that this will are was were has have can its".split())


def stem(word: str) -> str:
    """A crude stem: "follows" / "following" / "followed" meet, and "value" / "values", "use" / "used"."""
    w = re.sub(r"^[^\w]+|[^\w]+$", "", word.lower())
    for suffix in _SUFFIXES:
        if w.endswith(suffix) and len(w) - len(suffix) >= 3:
            return w[: -len(suffix)][:5]
    return (w[:-1] if w.endswith("ed") else w)[:5]  # "used" -> "use"


@functools.lru_cache(maxsize=64)
def sentences(text: str) -> tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...]:
    """The retrieved text's sentences with their words and the words' stems, read once for every clause."""
    out = []
    for sentence in _SENTENCE.split(text):
        tokens = tuple(_WORD.findall(_IDENTIFIER.sub(" ", sentence)))  # `follow_redirects` says nothing of following
        out.append((sentence, tokens, tuple(stem(w) for w in tokens)))
    return tuple(out)


def _negator(word: str) -> bool:
    return word in _NEGATORS or word.endswith("n't")


def predicates(clause: str) -> list[tuple[str, bool]]:
    """The clause's predicates (each verb, or the adjective or noun after a copula) and whether each is negated;
    none for code, a table row or a fragment ("note that X": the claim is X, not the noting)."""
    if re.search(r"[=(){};]|\|", clause) or len(_WORD.findall(clause)) < 4:
        return []
    out = []
    for t in parse(clause):
        if t.pos_ == "VERB" and t.dep_ not in ("aux", "amod", "compound") and t.lower_ not in _FRAMING | _LIGHT_VERBS:
            pred, verb = t, t
        elif t.dep_ in ("acomp", "attr") and t.head.pos_ == "AUX":
            pred, verb = t, t.head
        else:
            continue
        if pred.is_alpha and len(pred.text) >= 3 and pred.lower_ not in ("same", "different", "true", "false"):
            out.append((pred.lower_, any(c.dep_ == "neg" for c in (*verb.children, *pred.children))))
    return out


def opposed(clause: str, g: Grounds, known: str = "") -> str | None:
    """The sentence of the retrieved text that has the clause's predicate and two more of its words, with the other
    polarity (a negation right before the predicate there, none in the clause, or the reverse), or None. Words of
    `known` (the expected answer) do not count as shared."""
    if not g.known:
        return None
    base = {stem(w) for w in _WORD.findall(clause.lower()) if len(w) > 2}
    base -= {stem(w) for w in _WORD.findall(known.lower())} | _LIGHT
    for pred, negated in predicates(clause):
        target, mine = stem(pred), base - {stem(pred)}
        said = set()  # the polarities the retrieved text gives the predicate where it says what the clause says
        for sentence, tokens, stems in sentences(g.text):
            at = [i for i, w in enumerate(tokens) if stems[i] == target]
            if at and len(mine & set(stems)) >= 2:
                said |= {(any(_negator(w) for w in tokens[max(0, i - 3) : i]), sentence) for i in at}
        if said and all(polarity != negated for polarity, _ in said):  # never with the clause's polarity
            return min(said, key=lambda p: len(p[1]))[1]
    return None

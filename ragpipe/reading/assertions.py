"""What a clause of an answer puts forward about its subject: code, or a name or number the question does not hold
(proposes), the things it speaks of that the question did not name (claims), whether it guesses at all (advice to
the asker does not), and its content words the retrieved text does not use (unsupported). Read beside a refusal by
ragpipe.verdicts.negatives; the facts and their grounding are ragpipe.reading.grounding."""

from __future__ import annotations

import re
from typing import Any

from ragpipe.reading.grounding import _META, Fact, Grounds, _key, facts, grounded, in_clause, parse
from ragpipe.reading.match import content_words

_CONTENT_POS = {"NOUN", "PROPN", "NUM"}  # what a claim is about; verbs are often about the answering


def proposes(answer: str, clause: str, question: str) -> bool:
    """Does the clause put forward content of its own: a statement (not a question back) holding code, or a name or
    number the question does not hold?"""
    if clause.rstrip().endswith("?"):
        return False
    asked = content_words(question)
    return any(
        in_clause(f.text, clause) and (f.kind == "code" or not content_words(f.text) <= asked) for f in facts(answer)
    )


def claims(answer: str, clause: str, question: str) -> int:
    """How many things the clause speaks of that the question did not name: its nouns, names and numbers (words
    about the source left out). "adt-run writes them to a temporary directory under /tmp" speaks of two."""
    asked = content_words(question)
    low = clause.lower()
    return sum(
        1
        for t in parse(answer)
        if t.pos_ in _CONTENT_POS
        and not t.is_stop
        and len(t.text) > 2
        and _key(t.text) not in _META
        and not content_words(t.text) <= asked
        and re.search(r"(?<!\w)" + re.escape(t.lower_) + r"(?!\w)", low)
    )


# Advice to the asker and talk about the question itself ("a mix-up of names"): nothing put forward about the subject.
_ADVICE = re.compile(
    r"\b(?:you|your|ask|check|contact|consult|see|try|look|refer|search|reach|mix-?up|confus\w*|premise|typo|"
    r"misspell\w*|question|names?)\b"
)


def guesses(answer: str, clause: str, question: str) -> bool:
    """Does the clause put something forward about the subject itself: code, a name or number the question does not
    hold, or a thing it speaks of that the question did not name ("they are discarded with the temporary
    directory")? Advice to the asker ("you could ask the maintainers") puts nothing forward."""
    if proposes(answer, clause, question):
        return True
    return not _ADVICE.search(clause) and claims(answer, clause, question) >= 1


def unsupported(answer: str, clause: str, g: Grounds) -> tuple[int, int]:
    """(content words of `clause` that neither the retrieved texts nor the question hold, content words in all):
    nouns, names and numbers, words about the source left out."""
    if not g.known:
        return 0, 0
    low = clause.lower()
    words = [
        t
        for t in parse(answer)
        if t.pos_ in _CONTENT_POS
        and not t.is_stop
        and len(t.text) > 2
        and _key(t.text) not in _META
        and re.search(r"(?<!\w)" + re.escape(t.lower_) + r"(?!\w)", low)
    ]
    away = [t for t in words if _key(t.text) not in g.words and not (_numeric(t) and grounded(_fact(t), g))]
    return len(away), len(words)


def _numeric(tok: Any) -> bool:
    return tok.like_num or any(ch.isdigit() for ch in tok.text)


def _fact(tok: Any) -> Fact:
    return Fact(tok.text, "number" if _numeric(tok) else "name", tok.idx, tok.idx + len(tok.text))

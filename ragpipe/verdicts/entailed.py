"""What the answer claims beside its value, read against the retrieved texts by ragpipe's entailment reader
(ragpipe.reading.entailment). A claim the texts contradict, or one they do not make, is found here; the rule
(ragpipe.verdicts.rule) says what it costs. Restating the question or the expected value is no claim of its own, nor
is framing ("Based on the documents, ...")."""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from ragpipe.reading import claims_of, keys, replaced, sentences

# How sure the reader must be before its reading changes a verdict (bench/README.md, "The entailment reader").
CONTRADICTED = 0.80
NOT_IN_CONTEXT = 0.80
SUPPORTED = 0.90  # a clause beside a refusal that says what the retrieved texts cover
_ASIDE = frozenset("answer value default final yes correct exactly also".split())


@dataclass(frozen=True)
class Finding:
    claim: str
    label: str  # contradicted | not_in_context
    p: float
    premise: str  # the retrieved sentences it was read against


def enabled() -> bool:
    """The reader is on unless RAGPIPE_ENTAILMENT=0, and when its trained layers are installed."""
    if os.environ.get("RAGPIPE_ENTAILMENT", "1") == "0":
        return False
    from ragpipe.reading import available

    return available()


def own_claims(answer: str, restated: str, skip: Callable[[str], bool]) -> list[str]:
    """The answer's claims that say more than `restated` (the question and the value) and that `skip` keeps."""
    known = keys(restated) | _ASIDE
    return [c for c in claims_of(answer) if keys(c) - known and not skip(c)]


_NEGATION = re.compile(r"\b(?:not|no|never|none|nor|neither|cannot|without)\b|n't\b", re.I)


# words that say where a claim comes from ("per the docs:", "the manual says"), not what it says
_SOURCE_TALK = frozenset("per according docs documentation manual passage passages says states".split())


def said_as_written(claim: str, contexts: Sequence[str], restated: str = "") -> bool:
    """Every content word of the claim (but those of the question and the value, and the words that name its source)
    stands in one retrieved sentence, with as many negations: the claim says what that sentence says, or less,
    whatever the reader makes of it."""
    want, negations = keys(claim) - keys(restated) - _SOURCE_TALK, len(_NEGATION.findall(claim))
    return any(want <= keys(s) and len(_NEGATION.findall(s)) == negations for text in contexts for s in sentences(text))


def finding(answer: str, contexts: Sequence[str], restated: str, skip: Callable[[str], bool]) -> Finding | None:
    """The first claim the retrieved texts contradict (checked first), else the first they do not make, each only
    when the reader is sure; None when there is none, no text to read against, or the reader is off."""
    if not contexts or not enabled():
        return None
    from ragpipe.reading import entail

    read = [
        e
        for e in entail(own_claims(answer, restated, skip), contexts)
        if not said_as_written(e.claim, contexts, restated)
    ]
    for e in read:
        if e.contradicted >= CONTRADICTED:
            return Finding(e.claim, "contradicted", e.contradicted, e.premise)
    for e in read:
        if e.not_in_context >= NOT_IN_CONTEXT:
            return Finding(e.claim, "not_in_context", e.not_in_context, e.premise)
    return None


def replaced_claim(answer: str, contexts: Sequence[str], restated: str) -> str | None:
    """The first claim of the answer that restates a retrieved sentence with one word swapped for its rival
    ("a lowercase 's'" where the text says "a capital letter 'S'"), worded for the reason; None when there is none.
    Read by rule (ragpipe.reading.substitution), not by the reader, which misses such small changes."""
    for claim in claims_of(answer):
        hit = replaced(claim, contexts, restated)
        if hit:
            return (
                f"{claim[:140]!r} ({hit.mine!r} where the retrieved text says {hit.theirs!r}: {hit.sentence[:140]!r})"
            )
    return None


def supported(claim: str, contexts: Sequence[str], restated: str = "") -> bool:
    """Do the retrieved texts make the claim: said as written there, or read as supported by the reader (p >=
    SUPPORTED)? False without texts or with the reader off, where only the words as written can tell."""
    if not contexts:
        return False
    if said_as_written(claim, contexts, restated):
        return True
    if not enabled():
        return False
    from ragpipe.reading import entail

    return entail([claim], contexts)[0].supported >= SUPPORTED

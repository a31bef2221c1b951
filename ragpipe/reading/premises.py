"""What a claim is read against: the retrieved texts cut into sentences, and the few sentences that share most words
with the claim, in the order the texts give them. The entailment reader sees a claim beside this premise only, in
training and in use alike, so what it learns is what it is asked."""

from __future__ import annotations

import re
from collections.abc import Sequence

PREMISE_SENTENCES = 3  # at most this many sentences ...
PREMISE_WORDS = 90  # ... and this many words

_SENTENCE_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9`])|\n\s*\n|\n(?=\s*(?:[-*\u2022]|\d+[.)])\s)")
_WORD = re.compile(r"[A-Za-z][A-Za-z0-9_'-]*|\d+(?:[.,]\d+)*")
_STOP = frozenset(
    "a an the and or but if of to in on at by for with from as is are was were be been being it its this that these "
    "those there here which who whom whose what when where why how not no do does did done has have had can could "
    "will would shall should may might must than then so such also only just into onto over under about after "
    "before between their they them he she his her we our you your i me my all any each every some more most other "
    "very up out off again further once same own too both few nor s t".split()
)


def sentences(text: str) -> list[str]:
    """The sentences of a text (list items and paragraphs end one too), whitespace collapsed."""
    out = []
    for part in _SENTENCE_END.split(text):
        part = " ".join(part.split())
        if len(part) > 2:
            out.append(part)
    return out


def keys(text: str) -> set[str]:
    """The words that carry content: lower-cased, stop words out, numbers kept as written."""
    return {w.lower() for w in _WORD.findall(text) if w.lower() not in _STOP}


def premise(claim: str, contexts: Sequence[str]) -> str:
    """The sentences of `contexts` that share most content words with `claim` (ties: the earlier), up to
    PREMISE_SENTENCES and PREMISE_WORDS, joined in their own order. No shared word at all: the first sentences."""
    want = keys(claim)
    pool = [s for text in contexts for s in sentences(text)]
    if not pool:
        return ""
    shared = [len(want & keys(s)) for s in pool]
    scored = sorted(range(len(pool)), key=lambda i: (-shared[i] / (1 + len(keys(pool[i])) ** 0.5), i))
    if shared[scored[0]]:
        scored = [i for i in scored if shared[i]]  # a sentence sharing no word adds nothing to read against
    chosen: list[int] = []
    words = 0
    for i in scored:
        n = len(pool[i].split())
        if chosen and (len(chosen) >= PREMISE_SENTENCES or words + n > PREMISE_WORDS):
            break
        chosen.append(i)
        words += n
    return " ".join(pool[i] for i in sorted(chosen))
